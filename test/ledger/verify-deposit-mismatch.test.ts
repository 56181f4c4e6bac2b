import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, Db } from "../../src/db/database.js";
import { createCheckoutSession } from "../../src/deposits/create.js";
import { closeSession, recordSingleTransferDeposit } from "../../src/deposits/settle.js";
import { DEFAULT_FEE_SCHEDULE, type FeeSchedule } from "../../src/domain/fees.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import { holdFunds, requirePosted, settleHold } from "../../src/ledger/operations.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { insertTransaction } from "../../src/transactions/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { DepositIndexReserve } from "../../src/wallet/index-reserve.js";
import { openTestDatabase } from "../support/db.js";
import { ctx, newMerchant } from "./support.js";

// `stablegate ledger verify`, deposit check: every closed deposit's netAmount and fee are what its
// posting credited. The ledger tables are append-only (triggers), so the states it must catch are
// made on the `transactions` side: a row changed after its posting, or a closed deposit inserted
// without one. The tests run in order on one database: each leaves the books clean again, except
// the last.

const TRC = "USDT-TRC20" as const;
const deriver = AddressDeriver.fromMnemonic("test test test test test test test test test test test junk");
/** A 1 % deposit fee, so that the fee side of the check has something to compare. */
const fees: FeeSchedule = {
  ...DEFAULT_FEE_SCHEDULE,
  [TRC]: { ...DEFAULT_FEE_SCHEDULE[TRC], deposit: { fixed: 0n, ppm: 10_000n } },
};
const createDeps = {
  deriver,
  indexes: new DepositIndexReserve(),
  fees,
  latePaymentWatchHours: 1,
};

let database: Database;
let merchantId: string;
let seq = 0;

beforeAll(async () => {
  database = await openTestDatabase();
  merchantId = await newMerchant(database.db);
});
afterAll(() => database?.close());

/** A payment to a deposit address, confirmed and credited at once (the deposit logic's write). */
function singleTransferDeposit(amount: bigint) {
  const n = ++seq;
  return database.db.transaction().execute((trx) =>
    recordSingleTransferDeposit(
      trx,
      { fees },
      {
        merchantId,
        environment: "sandbox",
        currencyType: TRC,
        amount,
        address: `TAddress${n}`,
        txHash: `${n}`.padStart(64, "0"),
        observationId: `obs_verify_${n}`,
        now: new Date(),
      },
    ),
  );
}

/** A checkout session of `amount`, then closed with `received` (none: left open, pending). */
async function session(amount: bigint, close?: { status: "confirmed" | "failed"; received: bigint }) {
  const scope = { merchantId, environment: "sandbox" as const };
  const input = {
    amount,
    currencyType: TRC,
    lifetimeMs: 60_000,
    callbackUrl: null,
    orderId: null,
    metadata: null,
  };
  return database.db.transaction().execute(async (trx) => {
    const s = await createCheckoutSession(trx, createDeps, scope, input, new Date());
    if (!close) return s.transaction;
    return closeSession(trx, { fees }, s, { ...close, txHash: null, now: new Date() });
  });
}

async function deposit(db: Db, id: string) {
  return db
    .selectFrom("transactions")
    .select(["net_amount", "fee", "actual_balance", "status"])
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
}

const mismatches = async () =>
  (await verifyLedger(database.db)).problems.filter((p) => p.kind === "deposit_mismatch");

let single: string;
let overpaid: string;

describe("ledger verify: deposits against their postings", () => {
  it("reports nothing for a clean state: credited deposits, closed sessions, an open one, a withdrawal", async () => {
    single = (await singleTransferDeposit(250n * UNIT)).id;
    await singleTransferDeposit(100n * UNIT);
    // Overpaid (confirmed), partly paid then expired (failed, credited), unpaid (failed, no posting).
    overpaid = (await session(40n * UNIT, { status: "confirmed", received: 50n * UNIT })).id;
    await session(40n * UNIT, { status: "failed", received: 10n * UNIT });
    const unpaid = await session(40n * UNIT, { status: "failed", received: 0n });
    // Still open: pending, no posting, not checked.
    const open = await session(30n * UNIT);
    // A completed withdrawal: not a deposit (its posting is `hold:`/`settle:`, not `deposit:`).
    await database.db.transaction().execute(async (trx) => {
      const w = await insertTransaction(trx, {
        id: newId("tx"),
        merchantId,
        environment: "sandbox",
        type: "withdrawal",
        status: "completed",
        currencyType: TRC,
        amount: 20n * UNIT,
        fee: UNIT,
      });
      requirePosted(await holdFunds(trx, ctx(merchantId, w.id), 20n * UNIT));
      requirePosted(await settleHold(trx, ctx(merchantId, w.id), 20n * UNIT, UNIT));
    });

    expect(await deposit(database.db, single)).toMatchObject({
      status: "confirmed",
      net_amount: String(247_500_000n),
      fee: String(2_500_000n),
    });
    expect(await deposit(database.db, unpaid.id)).toMatchObject({
      status: "failed",
      net_amount: "0",
      fee: "0",
    });
    expect((await deposit(database.db, open.id)).status).toBe("pending");
    const report = await verifyLedger(database.db);
    expect(report).toMatchObject({ ok: true, problems: [] });
    expect(report.postings).toBe(6); // 4 deposits credited + hold + settle
  });

  it("reports a confirmed deposit whose credited amount differs from its posting, by its id", async () => {
    // The row now says 1 unit more arrived and was credited than the posting credited.
    await sql`update transactions set actual_balance = actual_balance + 1, net_amount = net_amount + 1
              where id = ${single}`.execute(database.db);
    const report = await verifyLedger(database.db);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      {
        kind: "deposit_mismatch",
        detail: `deposit ${single}: netAmount 247500001 and fee 2500000, posting credited 247500000 and fee 2500000`,
      },
    ]);
    await sql`update transactions set actual_balance = actual_balance - 1, net_amount = net_amount - 1
              where id = ${single}`.execute(database.db);
    expect(await verifyLedger(database.db)).toMatchObject({ ok: true, problems: [] });
  });

  it("reports a closed session whose fee differs from its posting's fee", async () => {
    // Same amount received, 1 unit more fee and 1 less net than the posting (50 USDT, 1 % fee).
    await sql`update transactions set fee = fee + 1, net_amount = net_amount - 1 where id = ${overpaid}`.execute(
      database.db,
    );
    expect(await mismatches()).toEqual([
      {
        kind: "deposit_mismatch",
        detail: `deposit ${overpaid}: netAmount 49499999 and fee 500001, posting credited 49500000 and fee 500000`,
      },
    ]);
    await sql`update transactions set fee = fee - 1, net_amount = net_amount + 1 where id = ${overpaid}`.execute(
      database.db,
    );
    expect(await verifyLedger(database.db)).toMatchObject({ ok: true, problems: [] });
  });

  it("reports closed deposits with no posting at all (confirmed, and failed with a credit due), not a pending one", async () => {
    const confirmed = await insertTransaction(database.db, {
      id: newId("tx"),
      merchantId,
      environment: "sandbox",
      type: "deposit",
      status: "confirmed",
      currencyType: TRC,
      amount: 7n * UNIT,
      fee: 70_000n,
      actualBalance: 7n * UNIT,
    });
    const failed = await insertTransaction(database.db, {
      id: newId("tx"),
      merchantId,
      environment: "sandbox",
      type: "deposit",
      status: "failed",
      currencyType: TRC,
      amount: 3n * UNIT,
      fee: 0n,
      actualBalance: 3n * UNIT,
    });
    await insertTransaction(database.db, {
      id: newId("tx"),
      merchantId,
      environment: "sandbox",
      type: "deposit",
      status: "pending",
      currencyType: TRC,
      amount: 9n * UNIT,
      fee: 0n,
    });
    const report = await verifyLedger(database.db);
    expect(report.ok).toBe(false);
    expect([...report.problems].sort((a, b) => a.detail.localeCompare(b.detail))).toEqual(
      [
        {
          kind: "deposit_mismatch",
          detail: `deposit ${confirmed.id}: netAmount 6930000 and fee 70000, posting credited 0 and fee 0`,
        },
        {
          kind: "deposit_mismatch",
          detail: `deposit ${failed.id}: netAmount 3000000 and fee 0, posting credited 0 and fee 0`,
        },
      ].sort((a, b) => a.detail.localeCompare(b.detail)),
    );
  });
});
