import { spawn } from "node:child_process";
import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.js";
import { BackupFailure } from "./errors.js";

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
      env: { ...process.env, ...env },
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
