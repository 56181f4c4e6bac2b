import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import pg from "pg";
import { inject } from "vitest";
import { type Database, openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL;
export const onPostgres = Boolean(TEST_DATABASE_URL);

function urlFor(name: string): string {
  const u = new URL(TEST_DATABASE_URL as string);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

let template: Promise<Blob | undefined> | undefined;

/** The migrated PGlite snapshot written by the global setup (read once per test file). */
function pgliteTemplate(): Promise<Blob | undefined> {
  template ??= (async () => {
    const file = inject("pgliteTemplate");
    return file ? new Blob([await readFile(file)]) : undefined;
  })();
  return template;
}

/** A fresh, migrated database of its own: a clone of the run's template on PostgreSQL, else PGlite. */
export async function openTestDatabase(poolSize = 5): Promise<Database & { url: string | undefined }> {
  if (!TEST_DATABASE_URL) {
    const database = await openDatabase({
      kind: "pglite",
      dataDir: undefined,
      snapshot: await pgliteTemplate(),
    });
    // Already migrated in the snapshot: this only checks it (and would apply anything newer).
    await migrate(database.db);
    return { ...database, url: undefined };
  }
  const template = inject("templateDatabase");
  const name = `sg_test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`create database ${name} template ${template}`));
  const url = urlFor(name);
  const database = await openDatabase({ kind: "postgres", url, poolSize });
  return {
    ...database,
    url,
    async close() {
      await database.close();
      await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    },
  };
}

/** An empty (unmigrated) PostgreSQL database, for migration tests. */
export async function createEmptyPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `sg_empty_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`create database ${name}`));
  return {
    url: urlFor(name),
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => {}),
  };
}
