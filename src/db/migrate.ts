import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import type { Db } from "./database.js";

/**
 * Forward-only SQL migrations from `migrations/NNNN_name.sql`, applied in version order, each in its own
 * transaction (a file whose first line is `-- migrate:no-transaction` runs outside one, for
 * `create index concurrently`). A session-level advisory lock makes concurrent start-ups safe:
 * the second process waits, then finds nothing left to apply. An applied file that was edited
 * afterwards stops start-up (checksum mismatch) instead of silently diverging.
 *
 * Repeatable function files (`migrations/functions/<name>.sql`, one `create or replace function` each):
 * the current definition of a database function that the versioned migrations redefined over time,
 * the one place to read and change it. After the versioned migrations, under the same lock, every
 * file whose checksum differs from the one recorded in `schema_functions` (a new or edited file) is
 * applied, all in one transaction; an unchanged file is not run again.
 */

export const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));
const LOCK_KEY = 7_242_516_411; // arbitrary, constant: "stablegate migrations"

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
  checksum: string;
  transactional: boolean;
}

export async function readMigrations(dir = MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  const out: MigrationFile[] = [];
  for (const file of files) {
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) throw new Error(`migration file name must look like 0001_name.sql: ${file}`);
    const text = await readFile(path.join(dir, file), "utf8");
    out.push({
      version: Number(m[1]),
      name: m[2] as string,
      sql: text,
      checksum: createHash("sha256").update(text).digest("hex"),
      transactional: !text.startsWith("-- migrate:no-transaction"),
    });
  }
  // Versions are unique and increasing; gaps are allowed (work merged from parallel branches).
  out.forEach((mig, i) => {
    const prev = out[i - 1];
    if (prev && prev.version === mig.version) throw new Error(`two migrations share version ${mig.version}`);
  });
  return out;
}

/** The subfolder of the repeatable function files. */
export const FUNCTIONS_SUBDIR = "functions";

export interface FunctionFile {
  /** The file name without `.sql`: by convention the function's name. */
  name: string;
  sql: string;
  checksum: string;
}

/** `dir/functions/*.sql` in name order; none when the folder does not exist. */
export async function readFunctionFiles(dir = MIGRATIONS_DIR): Promise<FunctionFile[]> {
  const folder = path.join(dir, FUNCTIONS_SUBDIR);
  let entries: string[];
  try {
    entries = await readdir(folder);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const out: FunctionFile[] = [];
  for (const file of entries.filter((f) => f.endsWith(".sql")).sort()) {
    const m = /^([a-z0-9_]+)\.sql$/.exec(file);
    if (!m)
      throw new Error(`function file name must look like function_name.sql: ${FUNCTIONS_SUBDIR}/${file}`);
    const text = await readFile(path.join(folder, file), "utf8");
    out.push({ name: m[1] as string, sql: text, checksum: createHash("sha256").update(text).digest("hex") });
  }
  return out;
}

export interface MigrateResult {
  /** The versioned migrations applied, e.g. `0016_ledger_post_function`. */
  applied: string[];
  /** The function files applied (new or changed since the last run), e.g. `ledger_post`. */
  functions: string[];
}

export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<MigrateResult> {
  const files = await readMigrations(dir);
  const functionFiles = await readFunctionFiles(dir);
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${LOCK_KEY})`.execute(conn);
    try {
      await sql`create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`.execute(conn);
      const done = await sql<{ version: number; name: string; checksum: string }>`
        select version, name, checksum from schema_migrations order by version`.execute(conn);
      const byVersion = new Map(done.rows.map((r) => [r.version, r]));
      const applied: string[] = [];
      const highest = Math.max(0, ...done.rows.map((r) => r.version));
      for (const file of files) {
        const prior = byVersion.get(file.version);
        if (prior) {
          if (prior.checksum !== file.checksum) {
            throw new Error(`migration ${file.version}_${file.name} was changed after it was applied`);
          }
          continue;
        }
        if (file.version < highest) {
          // Forward-only: a new file numbered below an applied one would run out of order.
          throw new Error(
            `migration ${file.version}_${file.name} is older than the applied ${highest}; renumber it above ${highest}`,
          );
        }
        const record = sql`insert into schema_migrations (version, name, checksum)
          values (${file.version}, ${file.name}, ${file.checksum})`;
        if (file.transactional) {
          await conn.transaction().execute(async (trx) => {
            await sql.raw(file.sql).execute(trx);
            await record.execute(trx);
          });
        } else {
          await sql.raw(file.sql).execute(conn);
          await record.execute(conn);
        }
        applied.push(`${String(file.version).padStart(4, "0")}_${file.name}`);
      }
      const unknown = done.rows.filter((r) => !files.some((f) => f.version === r.version));
      if (unknown.length > 0) {
        throw new Error(
          `the database has migrations this build does not know (${unknown.map((u) => u.name).join(", ")}); ` +
            "is an older build running against a newer database?",
        );
      }
      const functions = await applyFunctionFiles(conn, functionFiles);
      return { applied, functions };
    } finally {
      await sql`select pg_advisory_unlock(${LOCK_KEY})`.execute(conn);
    }
  });
}

/**
 * Applies the function files whose checksum differs from the recorded one, in one transaction (the
 * caller holds the migration lock), and forgets the records of files that were removed. Returns the
 * names applied.
 */
async function applyFunctionFiles(conn: Db, files: readonly FunctionFile[]): Promise<string[]> {
  await sql`create table if not exists schema_functions (
    name text primary key,
    checksum text not null,
    applied_at timestamptz not null default now()
  )`.execute(conn);
  // Every table is readable by the process roles' groups (migration 0025; on a database migrated
  // before them, the first run after gives it): they check at start-up that nothing is pending.
  await sql`do $$
    declare r text;
    begin
      foreach r in array array['stablegate_api', 'stablegate_worker', 'stablegate_signer'] loop
        if exists (select from pg_roles where rolname = r)
           and not has_table_privilege(r, 'schema_functions', 'SELECT') then
          execute format('grant select on schema_functions to %I', r);
        end if;
      end loop;
    end $$`.execute(conn);
  const done = await sql<{ name: string; checksum: string }>`
    select name, checksum from schema_functions`.execute(conn);
  const recorded = new Map(done.rows.map((r) => [r.name, r.checksum]));
  const changed = files.filter((f) => recorded.get(f.name) !== f.checksum);
  const removed = done.rows.map((r) => r.name).filter((name) => !files.some((f) => f.name === name));
  if (changed.length === 0 && removed.length === 0) return [];
  await conn.transaction().execute(async (trx) => {
    for (const file of changed) {
      try {
        await sql.raw(file.sql).execute(trx);
      } catch (err) {
        throw new Error(
          `function file ${FUNCTIONS_SUBDIR}/${file.name}.sql failed: ${(err as Error).message}`,
          {
            cause: err,
          },
        );
      }
      await sql`insert into schema_functions (name, checksum) values (${file.name}, ${file.checksum})
        on conflict (name) do update set checksum = excluded.checksum, applied_at = now()`.execute(trx);
    }
    // A removed file's function stays as it is (dropping one is a versioned migration); its record
    // goes, so that a file of that name added later is applied.
    if (removed.length > 0)
      await sql`delete from schema_functions where name = any (${removed})`.execute(trx);
  });
  return changed.map((f) => f.name);
}

/**
 * What this build has that the database has not applied (the `api`/`worker`/`signer` roles refuse to
 * start): versioned migrations by name, then function files that are new or changed, as
 * `functions/<name>`.
 */
export async function pendingMigrations(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = await readMigrations(dir);
  const functionFiles = await readFunctionFiles(dir);
  const exists = await sql<{ m: string | null; f: string | null }>`
    select to_regclass('schema_migrations')::text as m, to_regclass('schema_functions')::text as f`.execute(
    db,
  );
  const pendingFunctions = async (): Promise<string[]> => {
    if (functionFiles.length === 0) return [];
    const done = exists.rows[0]?.f
      ? (
          await sql<{ name: string; checksum: string }>`select name, checksum from schema_functions`.execute(
            db,
          )
        ).rows
      : [];
    const recorded = new Map(done.map((r) => [r.name, r.checksum]));
    return functionFiles
      .filter((f) => recorded.get(f.name) !== f.checksum)
      .map((f) => `${FUNCTIONS_SUBDIR}/${f.name}`);
  };
  if (!exists.rows[0]?.m) return [...files.map((f) => f.name), ...(await pendingFunctions())];
  const done = await sql<{ version: number }>`select version from schema_migrations`.execute(db);
  const applied = new Set(done.rows.map((r) => r.version));
  return [...files.filter((f) => !applied.has(f.version)).map((f) => f.name), ...(await pendingFunctions())];
}
