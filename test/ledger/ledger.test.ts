import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { AppError } from "../../src/domain/errors.js";
import { holdPosting, UnbalancedPostingError } from "../../src/domain/ledger.js";
import { UNIT } from "../../src/domain/money.js";
import { getBalances } from "../../src/ledger/balances.js";
import {
  creditDeposit,
  holdFunds,
  releaseHold,
  requirePosted,
  settleHold,
} from "../../src/ledger/operations.js";
import { postLedger } from "../../src/ledger/post.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { openTestDatabase } from "../support/db.js";
import { ctx, fund, newMerchant } from "./support.js";

let database: Database;
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(() => database?.close());

const balanceOf = async (merchantId: string) => {
  const b = await getBalances(database.db, merchantId, "sandbox");
  return b.find((x) => x.currencyType === "USDT-TRC20")!;
};

describe("ledger operations", () => {
  it("credits a deposit net of its fee and posts it once per transaction", async () => {
    const m = await newMerchant(database.db);
    const c = ctx(m);
    const first = await database.db
      .transaction()
      .execute((trx) => creditDeposit(trx, c, 100n * UNIT, 2n * UNIT));
    const again = await database.db
      .transaction()
      .execute((trx) => creditDeposit(trx, c, 100n * UNIT, 2n * UNIT));
    expect(first.status).toBe("posted");
    expect(again).toEqual({
      status: "already_posted",
      postingId: first.status === "posted" ? first.postingId : "",
    });
    expect(await balanceOf(m)).toMatchObject({ available: 98n * UNIT, held: 0n, total: 98n * UNIT });
    // The other currency and the other environment are untouched.
    const all = await getBalances(database.db, m, "production");
    expect(all.every((b) => b.total === 0n)).toBe(true);
  });

  it("holds, then settles with the fee to the fee account; a hold closes exactly once", async () => {
    const m = await newMerchant(database.db);
    await fund(database.db, m, 100n);
    const c = ctx(m);
    await database.db
      .transaction()
      .execute(async (trx) => requirePosted(await holdFunds(trx, c, 30n * UNIT)));
    expect(await balanceOf(m)).toMatchObject({ available: 70n * UNIT, held: 30n * UNIT });
    expect((await database.db.transaction().execute((trx) => holdFunds(trx, c, 30n * UNIT))).status).toBe(
      "already_posted",
    );

    const settled = await database.db.transaction().execute((trx) => settleHold(trx, c, 30n * UNIT, UNIT));
    expect(settled.status).toBe("posted");
    expect(await balanceOf(m)).toMatchObject({ available: 70n * UNIT, held: 0n });
    expect(
      (await database.db.transaction().execute((trx) => settleHold(trx, c, 30n * UNIT, UNIT))).status,
    ).toBe("already_posted");
    // Releasing a settled hold is refused: the money already left.
    await expect(
      database.db.transaction().execute((trx) => releaseHold(trx, c, 30n * UNIT)),
    ).rejects.toMatchObject({
      code: "INVALID_STATE",
    });
    expect(await balanceOf(m)).toMatchObject({ available: 70n * UNIT, held: 0n });
  });

  it("releases a hold back to available", async () => {
    const m = await newMerchant(database.db);
    await fund(database.db, m, 10n);
    const c = ctx(m);
    await database.db.transaction().execute((trx) => holdFunds(trx, c, 4n * UNIT));
    await database.db.transaction().execute((trx) => releaseHold(trx, c, 4n * UNIT));
    expect(await balanceOf(m)).toMatchObject({ available: 10n * UNIT, held: 0n });
    await expect(
      database.db.transaction().execute((trx) => settleHold(trx, c, 4n * UNIT, 0n)),
    ).rejects.toBeInstanceOf(AppError);
  });

  it("refuses a hold above the available balance as a value, writing nothing", async () => {
    const m = await newMerchant(database.db);
    await fund(database.db, m, 5n);
    const before = await verifyLedger(database.db);
    const r = await database.db.transaction().execute((trx) => holdFunds(trx, ctx(m), 5n * UNIT + 1n));
    expect(r).toEqual({
      status: "insufficient_balance",
      account: "available",
      balance: 5n * UNIT,
      needed: 5n * UNIT + 1n,
    });
    expect(() => requirePosted(r)).toThrow(expect.objectContaining({ code: "INSUFFICIENT_BALANCE" }));
    const after = await verifyLedger(database.db);
    expect(after.postings).toBe(before.postings);
    expect(await balanceOf(m)).toMatchObject({ available: 5n * UNIT, held: 0n });
  });

  it("refuses unbalanced postings in code", async () => {
    const m = await newMerchant(database.db);
    const bad = holdPosting("tx_bad", UNIT);
    bad.lines[1]!.amount = 2n * UNIT;
    await expect(
      database.db.transaction().execute((trx) => postLedger(trx, ctx(m), bad)),
    ).rejects.toBeInstanceOf(UnbalancedPostingError);
  });
});

describe("the database guards the ledger even against buggy code", () => {
  it("an unbalanced posting written directly fails at commit", async () => {
    const accounts = await database.db
      .selectFrom("ledger_accounts")
      .select("id")
      .where("owner", "=", "system")
      .limit(2)
      .execute();
    await expect(
      database.db.transaction().execute(async (trx) => {
        const p = await trx
          .insertInto("ledger_postings")
          .values({ business_key: "rogue:1", kind: "deposit", environment: "sandbox", transaction_id: null })
          .returning("id")
          .executeTakeFirstOrThrow();
        await trx
          .insertInto("ledger_entries")
          .values([
            { posting_id: String(p.id), account_id: String(accounts[0]!.id), amount: "5" },
            { posting_id: String(p.id), account_id: String(accounts[1]!.id), amount: "-4" },
          ])
          .execute();
      }),
    ).rejects.toThrow(/unbalanced/);
    expect(
      await database.db
        .selectFrom("ledger_postings")
        .where("business_key", "=", "rogue:1")
        .selectAll()
        .execute(),
    ).toEqual([]);
  });

  it("the journal is append-only and merchant balances cannot go negative", async () => {
    const m = await newMerchant(database.db);
    await fund(database.db, m, 1n);
    await expect(sql`update ledger_entries set amount = amount * 2`.execute(database.db)).rejects.toThrow(
      /immutable/,
    );
    await expect(sql`delete from ledger_postings`.execute(database.db)).rejects.toThrow(/immutable/);
    await expect(
      sql`update ledger_accounts set balance = -1 where owner = ${m} and kind = 'available'`.execute(
        database.db,
      ),
    ).rejects.toThrow(/check/i);
  });

  it("ledger verify passes on a sound ledger and reports a tampered balance", async () => {
    expect(await verifyLedger(database.db)).toMatchObject({ ok: true, problems: [] });
    const m = await newMerchant(database.db);
    await fund(database.db, m, 3n);
    await sql`update ledger_accounts set balance = balance + 1 where owner = ${m} and kind = 'available'`.execute(
      database.db,
    );
    const report = await verifyLedger(database.db);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      { kind: "balance_mismatch", detail: expect.stringContaining(`${m} sandbox USDT-TRC20 available`) },
    ]);
    await sql`update ledger_accounts set balance = balance - 1 where owner = ${m} and kind = 'available'`.execute(
      database.db,
    );
    expect((await verifyLedger(database.db)).ok).toBe(true);
  });
});
