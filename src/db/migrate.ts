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

export interface MigrateResult {
  applied: string[];
}

export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<MigrateResult> {
  const files = await readMigrations(dir);
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
      return { applied };
    } finally {
      await sql`select pg_advisory_unlock(${LOCK_KEY})`.execute(conn);
    }
  });
}

/** Migrations this build has that the database has not applied (the `api`/`worker` roles refuse to start). */
export async function pendingMigrations(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = await readMigrations(dir);
  const exists = await sql<{ t: string | null }>`select to_regclass('schema_migrations')::text as t`.execute(
    db,
  );
  if (!exists.rows[0]?.t) return files.map((f) => f.name);
  const done = await sql<{ version: number }>`select version from schema_migrations`.execute(db);
  const applied = new Set(done.rows.map((r) => r.version));
  return files.filter((f) => !applied.has(f.version)).map((f) => f.name);
}
