import path from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureRoot, runLint } from "./support.js";

// Issue #36: tables have owners — `npm run lint:deps` runs scripts/table-owners.mjs, which must fail
// on SQL against a table outside its owner (src/db/table-owners.json), in every form a query takes.

const OWNERS = {
  owners: { transactions: "transactions", watched_addresses: "watcher", dashboard_users: "auth" },
  readers: { dashboard_users: { audit: "names the actor (audit sits below auth)" } },
};

function check(files: Record<string, string>, owners: object = OWNERS) {
  const root = fixtureRoot("table-owners-", { ...files, "db/table-owners.json": JSON.stringify(owners) });
  return runLint("table-owners.mjs", root);
}

describe("lint:deps — SQL against a table outside its owner fails", () => {
  it("the real code passes", async () => {
    const { out } = await runLint("table-owners.mjs", path.resolve("src"));
    expect(out).toMatch(/each in its table's owner/);
  });

  it("a deliberate cross-owner query in each form: Kysely, a join, a sql template, sql.raw, a destructured builder", async () => {
    const r = await check({
      "transactions/records.ts": `export const ok = (db) => db.selectFrom("transactions").selectAll();`,
      "signer/evidence.ts": `import { sql } from "kysely";
export const a = (db) => db.selectFrom("transactions as t").selectAll();
export const b = (db) => db.selectFrom("x").innerJoin("watched_addresses as w", "w.id", "x.id");
export const c = (db) => sql\`select 1 from watched_addresses where id = \${1}\`;
export const d = (db) => sql.raw("update transactions set status = 'x'");
export const h = (db) => db.with("x", ({ selectFrom }) => selectFrom("watched_addresses"));`,
      "audit/notify.ts": `export const e = (db) => db.selectFrom("dashboard_users").select("email");
export const f = (db) => db.updateTable("dashboard_users").set({ email: "x" });`,
      "deposits/new.ts": `export const g = (db) => db.insertInto("new_table").values({});`,
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /signer\/evidence\.ts:2: SQL reading transactions in signer\/; its owner is transactions\//,
    );
    expect(r.out).toMatch(
      /signer\/evidence\.ts:3: SQL reading watched_addresses in signer\/; its owner is watcher\//,
    );
    expect(r.out).toMatch(/signer\/evidence\.ts:4: SQL reading watched_addresses/);
    expect(r.out).toMatch(/signer\/evidence\.ts:5: SQL writing transactions/);
    // A named reader may read, never write.
    expect(r.out).not.toMatch(/notify\.ts:1/);
    expect(r.out).toMatch(/audit\/notify\.ts:2: SQL writing dashboard_users in audit\/; its owner is auth\//);
    expect(r.out).toMatch(/deposits\/new\.ts:1: table new_table has no owner/);
    expect(r.out).not.toMatch(/transactions\/records\.ts/);
    expect(r.out).toMatch(/signer\/evidence\.ts:3: table x has no owner/);
    expect(r.out).toMatch(/signer\/evidence\.ts:6: SQL reading watched_addresses/);
    expect(r.out).toMatch(/table owners: 8 quer/);
  });

  it("comments and strings that are not SQL are not queries", async () => {
    const r = await check({
      "signer/evidence.ts": `// reads from transactions and watched_addresses through their owners
export const msg = "no update transactions here";
export const ok = (db) => db.selectFrom("watched_addresses").selectAll();`,
      "watcher/store.ts": `export const x = (db) => db.selectFrom("watched_addresses").selectAll();`,
    });
    expect(r.code).toBe(1);
    expect(r.out.trim().split("\n")).toEqual([
      expect.stringMatching(/signer\/evidence\.ts:3: SQL reading watched_addresses/),
      expect.stringMatching(/table owners: 1 quer/),
    ]);
  });
});
