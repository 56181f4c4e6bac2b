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
      const buildVersion = Math.max(0, ...files.map((f) => f.version));
      const functions = await applyFunctionFiles(conn, functionFiles, buildVersion);
      return { applied, functions };
    } finally {
      await sql`select pg_advisory_unlock(${LOCK_KEY})`.execute(conn);
    }
  });
}

/**
 * Which function files a build may apply, from what the database recorded: each record holds the
 * checksum applied and `migration_version`, the highest versioned migration of the build that
 * applied it. A changed file is applied only by a build whose migrations are newer than that
 * record's: a function change comes with a versioned migration (even a comment-only one), so an
 * older build never puts back its older definition (it stops at "migrations this build does not
 * know" first, and would refuse here anyway), and an edit without a migration is refused instead
 * of being applied in whichever direction the last build to start happened to be.
 */
function planFunctionFiles(
  files: readonly FunctionFile[],
  recorded: readonly { name: string; checksum: string; migration_version: number }[],
  buildVersion: number,
) {
  const byName = new Map(recorded.map((r) => [r.name, r]));
  const apply: FunctionFile[] = [];
  const refused: string[] = [];
  const newer: string[] = [];
  for (const f of files) {
    const r = byName.get(f.name);
    if (!r) apply.push(f);
    else if (r.checksum === f.checksum) continue;
    else if (r.migration_version < buildVersion) apply.push(f);
    else if (r.migration_version > buildVersion) {
      newer.push(
        `${FUNCTIONS_SUBDIR}/${f.name}.sql was applied by a newer build (migration ${r.migration_version}; ` +
          `this build has ${buildVersion}): an older build does not change it back`,
      );
    } else {
      refused.push(
        `${FUNCTIONS_SUBDIR}/${f.name}.sql changed without a new versioned migration (both at ${buildVersion}): ` +
          "add one (a comment-only migration will do) so that the newer definition is the one applied",
      );
    }
  }
  // A removed file's function stays as it is (dropping one is a versioned migration); its record
  // goes, so that a file of that name added later is applied — unless a newer build wrote it.
  const removed = recorded
    .filter((r) => !files.some((f) => f.name === r.name) && r.migration_version <= buildVersion)
    .map((r) => r.name);
  return { apply, refused, newer, removed };
}

/**
 * Applies the function files `planFunctionFiles` allows, in one transaction (the caller holds the
 * migration lock), and forgets the records of files that were removed. Returns the names applied.
 */
async function applyFunctionFiles(
  conn: Db,
  files: readonly FunctionFile[],
  buildVersion: number,
): Promise<string[]> {
  // The record is migration 0029's table; a folder of migrations without it holds no function file.
  const table = await sql<{ t: string | null }>`select to_regclass('schema_functions')::text as t`.execute(
    conn,
  );
  if (!table.rows[0]?.t) {
    if (files.length === 0) return [];
    throw new Error(
      "function files need the schema_functions table of migration 0029, which this folder lacks",
    );
  }
  const done = await sql<{ name: string; checksum: string; migration_version: number }>`
    select name, checksum, migration_version from schema_functions`.execute(conn);
  const { apply, refused, newer, removed } = planFunctionFiles(files, done.rows, buildVersion);
  if (refused.length + newer.length > 0) throw new Error([...newer, ...refused].join("; "));
  if (apply.length === 0 && removed.length === 0) return [];
  await conn.transaction().execute(async (trx) => {
    for (const file of apply) {
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
      await sql`insert into schema_functions (name, checksum, migration_version)
        values (${file.name}, ${file.checksum}, ${buildVersion})
        on conflict (name) do update set checksum = excluded.checksum,
          migration_version = excluded.migration_version, applied_at = now()`.execute(trx);
    }
    if (removed.length > 0)
      await sql`delete from schema_functions where name = any (${removed})`.execute(trx);
  });
  return apply.map((f) => f.name);
}

/**
 * What this build has that the database has not applied (the `api`/`worker`/`signer` roles refuse to
 * start): versioned migrations by name, then function files this build would apply, as
 * `functions/<name>` (or refuse: then the reason).
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
          await sql<{ name: string; checksum: string; migration_version: number }>`
            select name, checksum, migration_version from schema_functions`.execute(db)
        ).rows
      : [];
    // What `migrate` of this build would apply or refuse; what a newer build applied is not pending
    // (like its versioned migrations: an older api may keep serving through an upgrade).
    const { apply, refused } = planFunctionFiles(
      functionFiles,
      done,
      Math.max(0, ...files.map((f) => f.version)),
    );
    return [...apply.map((f) => `${FUNCTIONS_SUBDIR}/${f.name}`), ...refused];
  };
  if (!exists.rows[0]?.m) return [...files.map((f) => f.name), ...(await pendingFunctions())];
  const done = await sql<{ version: number }>`select version from schema_migrations`.execute(db);
  const applied = new Set(done.rows.map((r) => r.version));
  return [...files.filter((f) => !applied.has(f.version)).map((f) => f.name), ...(await pendingFunctions())];
}

/** The versioned migrations this database recorded, in version order (none on an unmigrated one). */
export async function appliedMigrations(
  db: Db,
): Promise<{ version: number; name: string; checksum: string }[]> {
  const exists = await sql<{ m: string | null }>`select to_regclass('schema_migrations')::text as m`.execute(
    db,
  );
  if (!exists.rows[0]?.m) return [];
  const done = await sql<{ version: number; name: string; checksum: string }>`
    select version, name, checksum from schema_migrations order by version`.execute(db);
  return done.rows.map((r) => ({ version: Number(r.version), name: r.name, checksum: r.checksum }));
}
