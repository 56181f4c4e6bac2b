import { copyFile, mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/database.js";
import { MIGRATIONS_DIR, migrate, pendingMigrations, readMigrations } from "../../src/db/migrate.js";
import { createEmptyPostgresDatabase, onPostgres } from "../support/db.js";

async function tempMigrations(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "sg-mig-"));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  return dir;
}

describe("migrations", () => {
  it("the checked-in files have unique, increasing versions", async () => {
    const files = await readMigrations(MIGRATIONS_DIR);
    expect(files.length).toBeGreaterThan(0);
    expect(files[0]?.version).toBe(1);
    for (let i = 1; i < files.length; i++) expect(files[i]!.version).toBeGreaterThan(files[i - 1]!.version);
  });

  it("refuses a new migration numbered below one already applied", async () => {
    const d = await openDatabase({ kind: "pglite", dataDir: undefined });
    try {
      const dir = await tempMigrations({
        "0001_a.sql": "create table a (x int);",
        "0005_e.sql": "create table e (x int);",
      });
      expect((await migrate(d.db, dir)).applied).toEqual(["0001_a", "0005_e"]);
      await writeFile(path.join(dir, "0003_c.sql"), "create table c (x int);");
      await expect(migrate(d.db, dir)).rejects.toThrow(/older than the applied 5/);
    } finally {
      await d.close();
    }
  });

  it("apply once, then nothing is pending; re-running applies nothing (PGlite)", async () => {
    const d = await openDatabase({ kind: "pglite", dataDir: undefined });
    try {
      expect((await pendingMigrations(d.db)).length).toBeGreaterThan(0);
      const first = await migrate(d.db);
      expect(first.applied[0]).toBe("0001_foundation");
      expect(await pendingMigrations(d.db)).toEqual([]);
      expect((await migrate(d.db)).applied).toEqual([]);
    } finally {
      await d.close();
    }
  });

  it("0010 moves each pending event, with its lease, into the delivery queue; others stay out", async () => {
    const d = await openDatabase({ kind: "pglite", dataDir: undefined });
    try {
      const dir = await mkdtemp(path.join(tmpdir(), "sg-mig-"));
      const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith(".sql")).sort();
      for (const f of files.filter((f) => f < "0010"))
        await copyFile(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
      await migrate(d.db, dir);
      const m = await oldMerchant(d, "mer_mig", "mig@example.com");
      const at = new Date("2026-01-02T03:04:05.000Z");
      const until = new Date("2026-01-02T03:05:00.000Z");
      const event = (id: string, status: string, leased: boolean) => sql`
        insert into webhook_events (id, merchant_id, environment, transaction_id, type, transaction_status,
          body, delivery_status, next_attempt_at, locked_by, locked_until)
        values (${id}, ${m.id}, 'sandbox', 'tx', 'deposit', 'confirmed', '{}', ${status},
          ${status === "pending" ? at : null}, ${leased ? `w:${id}` : null}, ${leased ? until : null})`;
      await event("whe_pending", "pending", false).execute(d.db);
      await event("whe_leased", "pending", true).execute(d.db);
      await event("whe_delivered", "delivered", false).execute(d.db);
      await event("whe_manual", "failed", true).execute(d.db);
      for (const f of files.filter((f) => f >= "0010"))
        await copyFile(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
      await migrate(d.db, dir);
      const queue = await d.db.selectFrom("webhook_due").selectAll().orderBy("event_id").execute();
      expect(queue).toEqual([
        { event_id: "whe_leased", next_attempt_at: at, locked_by: "w:whe_leased", locked_until: until },
        { event_id: "whe_pending", next_attempt_at: at, locked_by: null, locked_until: null },
      ]);
      const leases = await d.db
        .selectFrom("webhook_events")
        .select(["id", "locked_by"])
        .where("locked_by", "is not", null)
        .execute();
      // A pending event's lease now lives in the queue; a manual retry's lease of a failed one stays.
      expect(leases).toEqual([{ id: "whe_manual", locked_by: "w:whe_manual" }]);
    } finally {
      await d.close();
    }
  });

  it("0018 makes every existing merchant login its merchant's owner; a platform admin stays without a role", async () => {
    const d = await openDatabase({ kind: "pglite", dataDir: undefined });
    try {
      const dir = await mkdtemp(path.join(tmpdir(), "sg-mig-"));
      const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith(".sql")).sort();
      for (const f of files.filter((f) => f < "0018"))
        await copyFile(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
      await migrate(d.db, dir);
      const m = await oldMerchant(d, "mer_own", "own@example.com");
      await sql`insert into dashboard_users (id, merchant_id, email, password_hash, role)
        values ('usr_old', ${m.id}, 'own@example.com', 'x', 'merchant'),
               ('adm_old', null, 'ops@example.com', 'x', 'admin')`.execute(d.db);
      for (const f of files.filter((f) => f >= "0018"))
        await copyFile(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
      await migrate(d.db, dir);
      const users = await d.db
        .selectFrom("dashboard_users")
        .select(["id", "member_role", "removed_at"])
        .orderBy("id")
        .execute();
      expect(users).toEqual([
        { id: "adm_old", member_role: null, removed_at: null },
        { id: "usr_old", member_role: "owner", removed_at: null },
      ]);
      // One owner per merchant, enforced by the database.
      await expect(
        sql`insert into dashboard_users (id, merchant_id, email, password_hash, role, member_role)
          values ('usr_two', ${m.id}, 'two@example.com', 'x', 'merchant', 'owner')`.execute(d.db),
      ).rejects.toThrow(/dashboard_users_owner_key/);
    } finally {
      await d.close();
    }
  });

  it("refuses to continue when an applied migration was edited", async () => {
    const d = await openDatabase({ kind: "pglite", dataDir: undefined });
    try {
      const dir = await tempMigrations({ "0001_a.sql": "create table a (x int);" });
      await migrate(d.db, dir);
      await writeFile(path.join(dir, "0001_a.sql"), "create table a (x bigint);");
      await expect(migrate(d.db, dir)).rejects.toThrow(/changed after it was applied/);
    } finally {
      await d.close();
    }
  });

  it("rolls back a failing migration entirely", async () => {
    const d = await openDatabase({ kind: "pglite", dataDir: undefined });
    try {
      const dir = await tempMigrations({
        "0001_bad.sql": "create table ok (x int); create table broken (x nosuchtype);",
      });
      await expect(migrate(d.db, dir)).rejects.toThrow();
      const t = await sql<{ t: string | null }>`select to_regclass('ok')::text as t`.execute(d.db);
      expect(t.rows[0]?.t).toBeNull();
    } finally {
      await d.close();
    }
  });

  it.skipIf(!onPostgres)("is safe when several processes migrate one PostgreSQL at once", async () => {
    const empty = await createEmptyPostgresDatabase();
    const dbs = await Promise.all(
      Array.from({ length: 4 }, () => openDatabase({ kind: "postgres", url: empty.url, poolSize: 2 })),
    );
    try {
      const results = await Promise.all(dbs.map((d) => migrate(d.db)));
      const appliedCounts = results.map((r) => r.applied.length).sort();
      const total = (await readMigrations()).length;
      expect(appliedCounts).toEqual([0, 0, 0, total]); // exactly one did the work
      const rows = await sql<{ n: string }>`select count(*)::text as n from schema_migrations`.execute(
        dbs[0]!.db,
      );
      expect(Number(rows.rows[0]?.n)).toBe(total);
    } finally {
      await Promise.all(dbs.map((d) => d.close()));
      await empty.drop();
    }
  });
});

/**
 * A merchant row as the first schema had it: today's `createMerchantWithKeys` writes columns that a
 * database migrated only up to an older version does not have yet (e.g. 0024's `created_by`).
 */
async function oldMerchant(d: Database, id: string, email: string): Promise<{ id: string }> {
  await sql`insert into merchants (id, email, company_name) values (${id}, ${email}, 'Old')`.execute(d.db);
  return { id };
}
