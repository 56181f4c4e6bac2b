import { spawn } from "node:child_process";
import { type Kysely, sql } from "kysely";
import { readEnvironment } from "../config/load.js";
import { readFunctionFiles, readMigrations } from "../db/migrate.js";
import type { DB } from "../db/schema.js";
import { BackupFailure, BackupRefusal } from "./errors.js";

/**
 * PostgreSQL's own tools, from PATH: `pg_dump --format=custom` writes the dump, `pg_restore` reads
 * it back. A dump made by a `pg_dump` older than the server may miss what the newer server has, so
 * an older one is refused, as is a `pg_restore` older than the `pg_dump` that wrote the archive
 * (it cannot read newer archive versions). The password of the connection URL goes to the tool in
 * its environment (PGPASSWORD), never on its command line, which other users of the host can read.
 */

/** `pg_dump`/`pg_restore` failed, or the database refused what the restore needs. */
export class PostgresToolError extends BackupFailure {}

export interface ToolVersion {
  /** `pg_dump (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)` */
  text: string;
  major: number;
}

/** The first line the tool prints for `--version`, or a refusal when it is not on PATH. */
export async function toolVersion(tool: "pg_dump" | "pg_restore"): Promise<ToolVersion> {
  let out: { code: number | null; stdout: string; stderr: string };
  try {
    out = await run(tool, ["--version"], {});
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new PostgresToolError(
        `${tool} is not on PATH: install PostgreSQL's client tools (Debian: apt install postgresql-client-<major>) ` +
          "of the server's major version or newer",
      );
    throw err;
  }
  const text = out.stdout.split("\n")[0]?.trim() ?? "";
  const m = /\(PostgreSQL\)\s+(\d+)/.exec(text);
  if (out.code !== 0 || !m) throw new PostgresToolError(`${tool} --version answered ${JSON.stringify(text)}`);
  return { text, major: Number(m[1]) };
}

/** The server's major version (`server_version_num` 150020 → 15). */
export async function serverMajor(db: Kysely<DB>): Promise<number> {
  const r = await sql<{ n: string }>`select current_setting('server_version_num') as n`.execute(db);
  return Math.floor(Number(r.rows[0]?.n ?? 0) / 10_000);
}

export function majorOf(version: string): number {
  return Number(/^(\d+)/.exec(version)?.[1] ?? 0);
}

/** The URL without its password, and the password for PGPASSWORD. */
function connection(url: string): { url: string; env: Record<string, string> } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password);
  u.password = "";
  return { url: u.toString(), env: password ? { PGPASSWORD: password } : {} };
}

function run(
  tool: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, {
      // The tools find themselves and their settings (PATH, PG*) in the process's environment.
      env: { ...readEnvironment(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      if (stdout.length < 65_536) stdout += c.toString("utf8");
    });
    child.stderr.on("data", (c: Buffer) => {
      if (stderr.length < 65_536) stderr += c.toString("utf8");
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * `pg_dump --format=custom` of the database at `url` into `file`. `snapshot`: a snapshot the caller
 * exported (`pg_export_snapshot()`) and keeps open, so that the dump sees exactly what the caller
 * read (the manifest's row counts).
 */
export async function pgDump(url: string, file: string, snapshot?: string): Promise<void> {
  const c = connection(url);
  const r = await run(
    "pg_dump",
    [
      "--format=custom",
      "--no-password",
      `--file=${file}`,
      ...(snapshot ? [`--snapshot=${snapshot}`] : []),
      `--dbname=${c.url}`,
    ],
    c.env,
  );
  if (r.code !== 0) throw new PostgresToolError(`pg_dump failed (exit ${r.code}): ${r.stderr.trim()}`);
}

/**
 * `pg_restore` of `file` into the (empty) database at `url`, in one transaction (a failure leaves
 * nothing behind), stopping at the first error. `--no-owner`: the restoring role (the owner's
 * DATABASE_URL, as for `stablegate migrate`) owns what it restores; the grants to the roles of
 * migration 0025 are restored as they were (the caller creates those roles first on a new cluster).
 */
export async function pgRestore(url: string, file: string): Promise<void> {
  const c = connection(url);
  const r = await run(
    "pg_restore",
    ["--single-transaction", "--exit-on-error", "--no-owner", "--no-password", `--dbname=${c.url}`, file],
    c.env,
  );
  if (r.code !== 0) throw new PostgresToolError(`pg_restore failed (exit ${r.code}): ${r.stderr.trim()}`);
}

/** What a database holds of its own (none of the system's): empty means an empty list. */
export async function databaseContents(db: Kysely<DB>): Promise<string[]> {
  const relations = await sql<{ what: string }>`
    select n.nspname || '.' || c.relname as what
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
      and n.nspname not in ('pg_catalog', 'information_schema')
      and n.nspname !~ '^pg_(toast|temp)'
    order by 1 limit 5`.execute(db);
  const functions = await sql<{ what: string }>`
    select 'function ' || p.proname as what
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' order by 1 limit 5`.execute(db);
  const extensions = await sql<{ what: string }>`
    select 'extension ' || extname as what from pg_extension where extname <> 'plpgsql' order by 1`.execute(
    db,
  );
  return [...relations.rows, ...functions.rows, ...extensions.rows].map((r) => r.what);
}

/**
 * `--wipe`: the public schema and everything in it (tables, functions, the pg_trgm extension)
 * dropped, and an empty one made as PostgreSQL 15 makes it (owned by `pg_database_owner`, usable
 * by all, created in by its owner only).
 */
export async function wipePublicSchema(db: Kysely<DB>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`drop schema if exists public cascade`.execute(trx);
    await sql`create schema public`.execute(trx);
    if ((await serverMajor(trx)) >= 15)
      await sql`alter schema public owner to pg_database_owner`.execute(trx);
    await sql`grant usage on schema public to public`.execute(trx);
  });
}

/**
 * The group roles of migration 0025 (cluster-wide), created when missing, as that migration does:
 * the restored grants name them, and a new cluster has none.
 */
export async function ensureGroupRoles(db: Kysely<DB>): Promise<void> {
  try {
    await createGroupRoles(db);
  } catch (err) {
    throw new PostgresToolError(
      `cannot create the group roles of migration 0025 (${(err as Error).message}): restore as a role ` +
        "with CREATEROLE, or create stablegate_api, stablegate_worker and stablegate_signer (NOLOGIN) first",
    );
  }
}

async function createGroupRoles(db: Kysely<DB>): Promise<void> {
  await sql`
    do $$
    declare
      r text;
    begin
      foreach r in array array['stablegate_api', 'stablegate_worker', 'stablegate_signer'] loop
        if not exists (select from pg_roles where rolname = r) then
          begin
            execute format('create role %I nologin', r);
          exception when duplicate_object or unique_violation then
            null;
          end;
        end if;
      end loop;
    end $$`.execute(db);
}

/**
 * The entry types of `pg_restore --list` a backup of stablegate's schema holds (listed from a real
 * backup of the migrated schema with data; test/backup/backup-restore.test.ts restores one). A type
 * the migrations never make — a materialized view (its data is a REFRESH that runs code as the
 * restoring role), a view, a rule, an event trigger, a schema, a cast, a foreign server … — is
 * refused before anything is written.
 */
export const DUMP_ENTRY_TYPES = [
  "ACL",
  "COMMENT",
  "CONSTRAINT",
  "EXTENSION",
  "FK CONSTRAINT",
  "FUNCTION",
  "INDEX",
  "SEQUENCE",
  "SEQUENCE SET",
  "TABLE",
  "TABLE DATA",
  "TRIGGER",
] as const;

/** The names the migrations (and the function files) give extensions, functions and triggers. */
async function migrationObjects(): Promise<{
  extensions: Set<string>;
  functions: Set<string>;
  triggers: Set<string>;
}> {
  const text = [
    ...(await readMigrations()).map((m) => m.sql),
    ...(await readFunctionFiles()).map((f) => f.sql),
  ]
    .join("\n")
    .toLowerCase();
  const names = (re: RegExp) => new Set([...text.matchAll(re)].map((m) => m[1] as string));
  return {
    extensions: names(/create\s+extension\s+(?:if\s+not\s+exists\s+)?"?([a-z0-9_]+)/g),
    functions: names(/create\s+(?:or\s+replace\s+)?function\s+(?:public\.)?"?([a-z0-9_]+)/g),
    triggers: names(/create\s+(?:or\s+replace\s+)?(?:constraint\s+)?trigger\s+"?([a-z0-9_]+)/g),
  };
}

/**
 * Refuses a dump whose table of contents (`pg_restore --list`) holds what stablegate's migrations
 * never make: an entry type outside `DUMP_ENTRY_TYPES`, an object outside the public schema, an
 * extension, function or trigger the migrations do not name. Defence in depth behind the archive's
 * authentication: the function bodies themselves are not compared.
 */
export async function checkDumpContents(file: string): Promise<void> {
  const r = await run("pg_restore", ["--list", file], {});
  if (r.code !== 0)
    throw new BackupRefusal(
      `pg_restore --list cannot read the dump (${r.stderr.trim()}); nothing was restored`,
    );
  const known = await migrationObjects();
  const types = [...DUMP_ENTRY_TYPES].sort((a, b) => b.length - a.length);
  const refused: string[] = [];
  for (const line of r.stdout.split("\n")) {
    if (line.trim() === "" || line.startsWith(";")) continue;
    const m = /^\d+; \d+ \d+ (.*)$/.exec(line);
    if (!m) {
      refused.push(`an unreadable line (${JSON.stringify(line.slice(0, 80))})`);
      continue;
    }
    const rest = m[1] as string;
    const type = types.find((t) => rest.startsWith(`${t} `));
    if (!type) {
      refused.push(rest.split(" ").slice(0, 4).join(" "));
      continue;
    }
    const [schema = "", name = ""] = rest.slice(type.length + 1).split(" ");
    const base = name.replace(/\(.*$/, "");
    const ok =
      type === "EXTENSION"
        ? schema === "-" && known.extensions.has(name)
        : type === "ACL" || type === "COMMENT"
          ? schema === "public" ||
            (schema === "-" && /^(SCHEMA public|EXTENSION [a-z0-9_]+)\b/.test(rest.slice(type.length + 3)))
          : schema === "public" &&
            (type !== "FUNCTION" || known.functions.has(base)) &&
            (type !== "TRIGGER" || known.triggers.has(rest.slice(type.length + 1).split(" ")[2] ?? ""));
    if (!ok) refused.push(rest.replace(/ \S+$/, ""));
  }
  if (refused.length > 0)
    throw new BackupRefusal(
      `the dump holds what stablegate's migrations never make (${refused.slice(0, 5).join("; ")}${refused.length > 5 ? "; …" : ""}): ` +
        "not a backup of a stablegate database; nothing was restored",
    );
}

/**
 * What `--wipe` would leave (it drops the public schema only), looked for before it drops anything:
 * schemas other than public and the system's, extensions outside public (but plpgsql), event triggers.
 */
export async function foreignObjects(db: Kysely<DB>): Promise<string[]> {
  const schemas = await sql<{ what: string }>`
    select 'schema ' || nspname as what from pg_namespace
    where nspname not in ('public', 'pg_catalog', 'information_schema')
      and nspname !~ '^pg_(toast|temp_|toast_temp_)'
    order by 1 limit 5`.execute(db);
  const extensions = await sql<{ what: string }>`
    select 'extension ' || e.extname as what from pg_extension e join pg_namespace n on n.oid = e.extnamespace
    where e.extname <> 'plpgsql' and n.nspname <> 'public' order by 1 limit 5`.execute(db);
  const triggers = await sql<{ what: string }>`
    select 'event trigger ' || evtname as what from pg_event_trigger order by 1 limit 5`.execute(db);
  return [...schemas.rows, ...extensions.rows, ...triggers.rows].map((r) => r.what);
}

/** The other client sessions on this connection's database (pg_stat_activity), described. */
export async function otherSessions(db: Kysely<DB>): Promise<string[]> {
  const r = await sql<{ what: string }>`
    select coalesce(nullif(application_name, ''), 'no application name') || ' as ' || coalesce(usename, '?') ||
           ' (pid ' || pid || ')' as what
    from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'
    order by pid`.execute(db);
  return r.rows.map((x) => x.what);
}

/** Whether the connection's role is a superuser (a restore should run as the database owner). */
export async function isSuperuser(db: Kysely<DB>): Promise<boolean> {
  const r = await sql<{
    s: boolean;
  }>`select rolsuper as s from pg_roles where rolname = current_user`.execute(db);
  return r.rows[0]?.s === true;
}
