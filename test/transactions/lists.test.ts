import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { newId } from "../../src/domain/ids.js";
import { listParams } from "../../src/domain/list.js";
import { UNIT } from "../../src/domain/money.js";
import {
  dailyVolume,
  findAnyTransaction,
  insertTransaction,
  listTransactions,
  listTransactionsAcrossMerchants,
} from "../../src/transactions/index.js";
import { newMerchant } from "../ledger/support.js";
import { openTestDatabase } from "../support/db.js";

// The transactions feature's lists (through db/paginate.ts) and reads, below the routes.

let database: Database;
let a: string;
let b: string;
const day = (iso: string) => new Date(`${iso}T12:00:00Z`);

beforeAll(async () => {
  database = await openTestDatabase();
  const db = database.db;
  a = await newMerchant(db);
  b = await newMerchant(db);
  const rows = [
    { merchantId: a, type: "deposit", status: "confirmed", amount: 10n, at: "2026-01-01" },
    { merchantId: a, type: "deposit", status: "confirmed", amount: 20n, at: "2026-01-02" },
    { merchantId: a, type: "withdrawal", status: "completed", amount: 5n, at: "2026-01-02" },
    { merchantId: a, type: "withdrawal", status: "pending", amount: 7n, at: "2026-01-03" },
    { merchantId: a, type: "payout", status: "failed", amount: 3n, at: "2026-01-03" },
    { merchantId: b, type: "deposit", status: "confirmed", amount: 99n, at: "2026-01-02" },
  ] as const;
  for (const r of rows) {
    const at = day(r.at);
    await insertTransaction(db, {
      id: newId("tx"),
      merchantId: r.merchantId,
      environment: "sandbox",
      type: r.type,
      status: r.status,
      currencyType: "USDT-TRC20",
      amount: r.amount * UNIT,
      fee: 0n,
      createdAt: at,
      confirmedAt: r.status === "confirmed" || r.status === "completed" ? at : null,
    });
  }
});
afterAll(() => database?.close());

describe("transaction lists", () => {
  it("pages a merchant's list with the filter's total, in a stable order without overlap", async () => {
    const scope = { merchantId: a, environment: "sandbox" as const };
    const first = await listTransactions(database.db, scope, {}, listParams({ limit: 2 }));
    const second = await listTransactions(database.db, scope, {}, listParams({ limit: 2, page: 2 }));
    const third = await listTransactions(database.db, scope, {}, listParams({ limit: 2, page: 3 }));
    expect([first.total, second.total, third.total]).toEqual([5, 5, 5]);
    const ids = [...first.rows, ...second.rows, ...third.rows].map((t) => t.id);
    expect(new Set(ids).size).toBe(5);
    expect(first.rows.every((t) => t.merchantId === a)).toBe(true);
    const withdrawals = await listTransactions(database.db, scope, { type: "withdrawal" }, listParams({}));
    expect(withdrawals.total).toBe(2);
    const byAmount = await listTransactions(
      database.db,
      scope,
      {},
      listParams({ sortBy: "amount", order: "asc" }),
    );
    expect(byAmount.rows.map((t) => t.amount)).toEqual([3n, 5n, 7n, 10n, 20n].map((n) => n * UNIT));
  });

  it("lists across merchants for the admin, optionally narrowed to one merchant", async () => {
    const all = await listTransactionsAcrossMerchants(database.db, {}, { type: "deposit" }, listParams({}));
    expect(all.rows.some((t) => t.merchantId === b)).toBe(true);
    const onlyB = await listTransactionsAcrossMerchants(database.db, { merchantId: b }, {}, listParams({}));
    expect(onlyB.total).toBe(1);
    expect(onlyB.rows[0]?.merchantId).toBe(b);
    expect((await findAnyTransaction(database.db, onlyB.rows[0]?.id ?? ""))?.merchantId).toBe(b);
    expect(await findAnyTransaction(database.db, "tx_missing")).toBeUndefined();
  });

  it("sums the daily volume: confirmed deposits in, completed withdrawals and payouts out", async () => {
    const scope = { merchantId: a, environment: "sandbox" as const };
    const volume = await dailyVolume(database.db, scope, 30, day("2026-01-03"));
    expect(volume).toEqual([
      { date: "2026-01-01", currencyType: "USDT-TRC20", incoming: 10n * UNIT, outgoing: 0n, count: 1 },
      { date: "2026-01-02", currencyType: "USDT-TRC20", incoming: 20n * UNIT, outgoing: 5n * UNIT, count: 2 },
    ]);
    const lastDay = await dailyVolume(database.db, scope, 1, day("2026-01-02"));
    expect(lastDay.map((v) => v.date)).toEqual(["2026-01-02"]);
  });
});
