import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { createCheckoutSession } from "../../src/deposits/create.js";
import { expireOneSession } from "../../src/deposits/expiry.js";
import { createDepositHandler } from "../../src/deposits/handler.js";
import { DEFAULT_FEE_SCHEDULE } from "../../src/domain/fees.js";
import { getBalances } from "../../src/ledger/balances.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { ManualClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { DepositIndexReserve } from "../../src/wallet/index-reserve.js";
import { openTestDatabase } from "../support/db.js";

// A payment and the expiry job racing for the same session resolve to exactly one outcome
// (README.md#money-when-a-payment-counts-and-books-that-match). The payment is mined 1 ms before the deadline (and no observation row tells the
// expiry job it is confirming), the expiry runs at the deadline; whichever takes the session lock first decides, and the other adapts:
// confirmed (no late deposit) or failed (nothing was there) + the payment as a late deposit.
const deriver = AddressDeriver.fromMnemonic("test test test test test test test test test test test junk");
const SESSIONS = 30;
const AMOUNT = 5_000_000n;
let database: Database;

beforeAll(async () => {
  database = await openTestDatabase(24);
});
afterAll(async () => {
  await database?.close();
});

it(`${SESSIONS} payment/expiry races: each session ends once, every payment credited once`, async () => {
  const db = database.db;
  const merchant = await createMerchantWithKeys(db, {
    email: `race-${Date.now()}@example.com`,
    companyName: "R",
  });
  const scope = { merchantId: merchant.id, environment: "sandbox" as const };
  const createdAt = new Date("2026-11-22T10:00:00Z");
  const deadline = new Date(createdAt.getTime() + 10 * 60_000);
  const sessions = await Promise.all(
    Array.from({ length: SESSIONS }, () =>
      db.transaction().execute((trx) =>
        createCheckoutSession(
          trx,
          {
            deriver,
            indexes: new DepositIndexReserve(),
            fees: DEFAULT_FEE_SCHEDULE,
            latePaymentWatchHours: 168,
          },
          scope,
          {
            amount: AMOUNT,
            currencyType: "USDT-TRC20",
            lifetimeMs: deadline.getTime() - createdAt.getTime(),
            callbackUrl: null,
            orderId: null,
            metadata: null,
          },
          createdAt,
        ),
      ),
    ),
  );
  // The sandbox simulator's time is the clock: the expiry job may close at the deadline.
  const expiryDeps = {
    fees: DEFAULT_FEE_SCHEDULE,
    clockTimedChains: [{ network: "USDT-TRC20" as const, environment: "sandbox" as const }],
  };
  const handler = createDepositHandler({
    clock: new ManualClock(deadline.getTime() - 1),
    fees: DEFAULT_FEE_SCHEDULE,
  });
  await Promise.all(
    sessions.flatMap((s, i) => [
      db.transaction().execute((trx) =>
        handler(trx, {
          observationId: `obs_race${i}`,
          network: "USDT-TRC20",
          environment: "sandbox",
          address: s.address,
          from: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
          txHash: `${i.toString(16).padStart(2, "0")}${"ab".repeat(31)}`,
          logIndex: 0,
          blockNumber: 100 + i,
          blockHash: "cd".repeat(32),
          blockTime: new Date(deadline.getTime() - 1),
          amount: AMOUNT,
          merchantId: merchant.id,
          purpose: "checkout",
          referenceId: s.transaction.id,
        }),
      ),
      expireOneSession(db, expiryDeps, deadline),
    ]),
  );
  // Anything the racing expiry calls skipped (another one held the lock) is closed now.
  while (await expireOneSession(db, expiryDeps, deadline)) {}

  const outcomes = { confirmed: 0, failed: 0 };
  for (const s of sessions) {
    const row = await db
      .selectFrom("transactions")
      .select(["status", "actual_balance"])
      .where("id", "=", s.transaction.id)
      .executeTakeFirstOrThrow();
    const late = await db
      .selectFrom("transactions")
      .select(["amount", "status"])
      .where("checkout_session_id", "=", s.transaction.id)
      .execute();
    const events = await db
      .selectFrom("webhook_events")
      .select("transaction_status")
      .where("transaction_id", "=", s.transaction.id)
      .execute();
    expect(events).toHaveLength(1);
    if (row.status === "confirmed") {
      outcomes.confirmed++;
      expect(row.actual_balance).toBe(AMOUNT.toString());
      expect(late).toHaveLength(0);
      expect(events[0]?.transaction_status).toBe("confirmed");
    } else {
      outcomes.failed++;
      expect(row.status).toBe("failed");
      expect(row.actual_balance).toBe("0");
      expect(late).toEqual([{ amount: AMOUNT.toString(), status: "confirmed" }]);
      expect(events[0]?.transaction_status).toBe("failed");
    }
  }
  expect(outcomes.confirmed + outcomes.failed).toBe(SESSIONS);
  console.log(`race outcomes: ${outcomes.confirmed} confirmed, ${outcomes.failed} failed + late deposit`);
  const balances = await getBalances(db, merchant.id, "sandbox");
  const trc = balances.find((b) => b.currencyType === "USDT-TRC20");
  expect(trc?.available).toBe(AMOUNT * BigInt(SESSIONS));
  expect((await verifyLedger(db)).ok).toBe(true);
}, 60_000);
