import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BackupResult } from "../../../src/backup/index.js";
import { openDatabase } from "../../../src/db/database.js";
import { migrate } from "../../../src/db/migrate.js";
import { BackupRefusal, onPostgres, refusalOf, restore, type Target, Workspace } from "./support.js";

// `restore --wipe` over a PostgreSQL database (docs/operations.md "Restoring", backups.md point 6).
// A refusal is "exit 2, nothing written": the operator's database must then be as it was.
//
// 1. A database that also holds a schema that is not stablegate's: the restore drops `public`
//    first and only then finds the other schema and refuses — the live data is gone and nothing is
//    restored. EXPECTED TO FAIL until objects outside `public` are looked for before the wipe.
// 2. A database in use (an api or worker connected): the wipe drops the tables under the running
//    processes. EXPECTED TO FAIL until --wipe refuses while other sessions are connected
//    (pg_stat_activity of the database), as the embedded restore refuses while serve holds DATA_DIR.

let ws: Workspace;
let backup: BackupResult;

beforeAll(async () => {
  ws = await Workspace.create();
  if (onPostgres) backup = await ws.backup();
}, 120_000);
afterAll(async () => {
  await ws?.close();
});

async function liveTarget(): Promise<Target & { url: string }> {
  const target = (await ws.newTarget()) as Target & { url: string };
  const db = await openDatabase({ kind: "postgres", url: target.url, poolSize: 1 });
  try {
    await migrate(db.db);
  } finally {
    await db.close();
  }
  return target;
}

async function publicTables(url: string): Promise<number> {
  const db = await openDatabase({ kind: "postgres", url, poolSize: 1 });
  try {
    const r = await sql<{
      n: string;
    }>`select count(*)::text as n from pg_tables where schemaname = 'public'`.execute(db.db);
    return Number(r.rows[0]?.n);
  } finally {
    await db.close();
  }
}

describe.runIf(onPostgres)("restore --wipe on PostgreSQL", { timeout: 120_000 }, () => {
  it("a refused wipe (a schema that is not stablegate's) leaves the database as it was", async () => {
    const target = await liveTarget();
    const db = await openDatabase({ kind: "postgres", url: target.url, poolSize: 1 });
    try {
      await sql`create schema operator_own`.execute(db.db);
      await sql`create table operator_own.notes (id int)`.execute(db.db);
    } finally {
      await db.close();
    }
    const before = await publicTables(target.url);
    expect(before).toBeGreaterThan(10);
    const err = await refusalOf(restore(target, { input: backup.file, wipe: true }));
    expect(err).toBeInstanceOf(BackupRefusal);
    expect(await publicTables(target.url), `refused with "${err?.message}", but`).toBe(before);
  });

  it("refuses to wipe a database other sessions are connected to (a running api or worker)", async () => {
    const target = await liveTarget();
    const running = await openDatabase({ kind: "postgres", url: target.url, poolSize: 1 });
    try {
      await sql`select 1`.execute(running.db); // holds its connection, as a running process does
      const err = await refusalOf(restore(target, { input: backup.file, wipe: true }));
      expect(err, "the wipe went ahead under a connected process").toBeInstanceOf(BackupRefusal);
    } finally {
      await running.close();
    }
  });
});
