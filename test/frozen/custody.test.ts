import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { postLedger } from "../../src/ledger/post.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { createLogger } from "../../src/observability/logger.js";
import { recordFreezeCheck } from "../../src/sender/frozen-addresses.js";
import { openTestDatabase } from "../support/db.js";

// The ledger's custody of own addresses the token's issuer froze (decisions/frozen-funds.md 13),
// on the database alone: what each reading posts, readings out of order, concurrent workers, and
// the ledger's refusals. The real-chain paths are test/frozen/own-addresses and chains.

let database: Database;
const lines: string[] = [];
const logger = createLogger("info", { write: (s: string) => void lines.push(s) });
const NET = "USDT-ERC20" as const;
const scope = { network: NET, environment: "sandbox" as const };
let n = 0;
const fresh = () => `0x${(++n).toString(16).padStart(40, "0")}`;

beforeAll(async () => {
  database = await openTestDatabase(10);
});
afterAll(() => database?.close());

async function custody() {
  const rows = await database.db
    .selectFrom("ledger_entries as e")
    .innerJoin("ledger_accounts as a", "a.id", "e.account_id")
    .select(["a.kind", (eb) => eb.fn.sum<string>("e.amount").as("sum")])
    .where("a.owner", "=", "system")
    .where("a.environment", "=", "sandbox")
    .where("a.currency_type", "=", NET)
    .groupBy("a.kind")
    .execute();
  const of = (k: string) => BigInt(rows.find((r) => r.kind === k)?.sum ?? 0);
  return { frozen: -of("frozen"), writtenOff: -of("written_off"), incoming: of("chain_incoming") };
}

const at = (address: string) => ({ ...scope, address, role: "hot_wallet" as const });
const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

describe("frozen custody (the system accounts frozen and written_off)", () => {
  it("follows the balance: frozen, more arrives, destroyed, released — each posting balanced, the merchants untouched", async () => {
    const a = fresh();
    const before = await custody();
    await recordFreezeCheck(database.db, at(a), { frozen: false, balance: 500n }, t(1), logger);
    expect(await custody()).toEqual(before);
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 500n }, t(2), logger);
    expect((await custody()).frozen - before.frozen).toBe(500n);
    // The same reading again: nothing.
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 500n }, t(3), logger);
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 700n }, t(4), logger);
    expect((await custody()).frozen - before.frozen).toBe(700n);
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 100n }, t(5), logger);
    const c = await custody();
    expect([c.frozen - before.frozen, c.writtenOff - before.writtenOff]).toEqual([100n, 600n]);
    expect(lines.some((l) => l.includes('"alert":"own_funds_written_off"'))).toBe(true);
    await recordFreezeCheck(database.db, at(a), { frozen: false, balance: 100n }, t(6), logger);
    const after = await custody();
    expect([after.frozen, after.writtenOff - before.writtenOff]).toEqual([before.frozen, 600n]);
    // The usable custody (a debit of chain_incoming) is 600 less than before: written off; the rest is back.
    expect(after.incoming - before.incoming).toBe(600n);
    const row = await database.db
      .selectFrom("frozen_addresses")
      .select(["frozen_amount", "postings", "released_at"])
      .where("address", "=", a)
      .executeTakeFirstOrThrow();
    expect({ ...row, frozen_amount: String(row.frozen_amount) }).toMatchObject({
      frozen_amount: "0",
      postings: 4,
    });
    expect(row.released_at).not.toBeNull();
    expect((await verifyLedger(database.db)).ok).toBe(true);
  });

  it("destroyed and released between two checks: the loss is written off, only what is left goes back", async () => {
    const a = fresh();
    const before = await custody();
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 300n }, t(1), logger);
    await recordFreezeCheck(database.db, at(a), { frozen: false, balance: 0n }, t(2), logger);
    const c = await custody();
    expect([c.frozen, c.writtenOff - before.writtenOff]).toEqual([before.frozen, 300n]);
  });

  it("a reading taken before the last one applied is dropped (two workers: no second write-off, no freeze again)", async () => {
    const a = fresh();
    const before = await custody();
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 400n }, t(1), logger);
    // Worker B read the destroyed balance at t(3) and recorded first …
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 0n }, t(3), logger);
    // … worker A's reading of t(2) (still 400) arrives late: dropped.
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 400n }, t(2), logger);
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 0n }, t(4), logger);
    const c = await custody();
    expect([c.frozen - before.frozen, c.writtenOff - before.writtenOff]).toEqual([0n, 400n]);
    // Released at t(5); a late "frozen" reading of t(4.5) does not freeze it again.
    await recordFreezeCheck(database.db, at(a), { frozen: false, balance: 0n }, t(6), logger);
    await recordFreezeCheck(database.db, at(a), { frozen: true, balance: 50n }, t(5), logger);
    const row = await database.db
      .selectFrom("frozen_addresses")
      .select("released_at")
      .where("address", "=", a)
      .executeTakeFirstOrThrow();
    expect(row.released_at).not.toBeNull();
    expect((await custody()).frozen).toBe(before.frozen);
  });

  it("concurrent identical readings post once", async () => {
    const a = fresh();
    const before = await custody();
    await Promise.all(
      Array.from({ length: 6 }, () =>
        recordFreezeCheck(database.db, at(a), { frozen: true, balance: 250n }, t(1), logger),
      ),
    );
    expect((await custody()).frozen - before.frozen).toBe(250n);
    const frozenAlerts = lines.filter((l) => l.includes('"alert":"own_address_frozen"') && l.includes(a));
    expect(frozenAlerts.length).toBe(1);
  });

  it("the ledger refuses a custody posting that touches a merchant account, and a custody posting with a merchant", async () => {
    await expect(
      postLedger(
        database.db,
        { environment: "sandbox", currencyType: NET },
        {
          kind: "custody",
          businessKey: `freeze:test:${fresh()}`,
          lines: [
            { account: { owner: "merchant", kind: "available" }, amount: 5n },
            { account: { owner: "system", kind: "frozen" }, amount: -5n },
          ],
        },
      ),
    ).rejects.toThrow(/touches no merchant account/);
    await expect(
      postLedger(
        database.db,
        { merchantId: "mer_x", environment: "sandbox", currencyType: NET, transactionId: "tx_x" },
        {
          kind: "custody",
          businessKey: `freeze:test:${fresh()}`,
          lines: [
            { account: { owner: "system", kind: "chain_incoming" }, amount: 5n },
            { account: { owner: "system", kind: "frozen" }, amount: -5n },
          ],
        },
      ),
    ).rejects.toThrow(/without a merchant/);
  });
});
