import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { purgeAuditLog } from "../../src/audit/index.js";
import { parseConfig } from "../../src/config/config.js";
import { openDatabase } from "../../src/db/database.js";
import { applyDatabaseRoles, type DatabaseRoleLogin } from "../../src/operator/database-roles.js";
import { onPostgres, openTestDatabase, TEST_DATABASE_URL } from "../support/db.js";

// Issue #34, noticed while closing it: the audit log's retention purge was allowed to any
// transaction that declared itself the purge (`set local stablegate.audit_retention = 'on'`), and
// the worker's database role may delete for that purge, so a compromised worker could erase the
// record of what it (or the api) did a minute ago. Now only records older than 30 days go, whoever
// asks, unless the caller owns the table (the migrating role).

describe("the retention setting", () => {
  it("is 0 (keep all) or at least 30 days", () => {
    expect(() => parseConfig({ AUDIT_RETENTION_DAYS: "7" })).toThrow(/AUDIT_RETENTION_DAYS/);
    expect(parseConfig({ AUDIT_RETENTION_DAYS: "30" }).audit.retentionDays).toBe(30);
    expect(parseConfig({}).audit.retentionDays).toBe(0);
  });
});

describe.skipIf(!onPostgres)("the worker's database role and the audit log (PostgreSQL)", () => {
  let owner: Awaited<ReturnType<typeof openTestDatabase>>;
  let logins: DatabaseRoleLogin[];
  let worker: pg.Client;

  beforeAll(async () => {
    owner = await openTestDatabase();
    const name = new URL(owner.url as string).pathname.slice(1);
    logins = await applyDatabaseRoles({ url: owner.url, prefix: `${name}_` });
    worker = new pg.Client({ connectionString: logins.find((l) => l.role === "worker")?.url });
    await worker.connect();
  });

  afterAll(async () => {
    await worker?.end();
    await owner?.close();
    if (logins) {
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      for (const l of logins) await admin.query(`drop role if exists "${l.user}"`);
      await admin.end();
    }
  });

  // Records told apart by their target (the id is an identity column).
  const insert = async (label: string, ageDays: number) => {
    await owner.db
      .insertInto("audit_log")
      .values({
        target_id: label,
        actor_type: "user",
        action: "auth.sign_in",
        created_at: new Date(Date.now() - ageDays * 86_400_000),
      })
      .execute();
  };
  const ids = async () =>
    (await owner.db.selectFrom("audit_log").select("target_id").orderBy("target_id").execute()).map(
      (r) => r.target_id,
    );

  it("declaring itself the purge, the worker deletes only records older than 30 days", async () => {
    await insert("aud_recent", 0);
    await insert("aud_old", 40);
    const purge = async (where: string) => {
      await worker.query("begin");
      try {
        await worker.query("set local stablegate.audit_retention = 'on'");
        const r = await worker.query(`delete from audit_log where ${where}`);
        await worker.query("commit");
        return r.rowCount;
      } catch (err) {
        await worker.query("rollback");
        throw err;
      }
    };
    // The attack: erase what just happened.
    await expect(purge("target_id = 'aud_recent'")).rejects.toMatchObject({ code: "42501" });
    await expect(purge("true")).rejects.toThrow(/keeps every record 30 days/);
    expect(await ids()).toEqual(["aud_old", "aud_recent"]);
    // The honest purge of its retention.
    expect(await purge("target_id = 'aud_old'")).toBe(1);
    expect(await ids()).toEqual(["aud_recent"]);
  });

  it("the worker's purge job with a cut-off in the future is refused; the records stay", async () => {
    const url = logins.find((l) => l.role === "worker")?.url as string;
    const asWorker = await openDatabase({ kind: "postgres", url, poolSize: 1 });
    try {
      await expect(purgeAuditLog(asWorker.db, new Date(Date.now() + 86_400_000))).rejects.toThrow(/30 days/);
      expect(await ids()).toEqual(["aud_recent"]);
    } finally {
      await asWorker.close();
    }
  });
});
