import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { AppError } from "../../src/domain/errors.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import { getBalances } from "../../src/ledger/balances.js";
import { holdFunds, releaseHold, requirePosted, settleHold } from "../../src/ledger/operations.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { onPostgres, openTestDatabase } from "../support/db.js";
import { ctx, fund, newMerchant } from "./support.js";

// On PostgreSQL these run with 20 connections at once; on PGlite they are serialised by its
// single connection (the same assertions must hold, they are just less of a stress test).
let database: Database;
beforeAll(async () => {
  database = await openTestDatabase(20);
});
afterAll(() => database?.close());

/** A withdrawal-style request: hold in its own transaction; 422 as an error like the API gives. */
async function holdRequest(merchantId: string, transactionId: string, units: bigint) {
  return database.db.transaction().execute(async (trx) => {
    requirePosted(await holdFunds(trx, ctx(merchantId, transactionId), units));
    return transactionId;
  });
}

describe(`concurrent postings (${onPostgres ? "PostgreSQL, 20 connections" : "PGlite"})`, () => {
  it("500 parallel holds of 1 USDT against 100 USDT: exactly 100 succeed, the rest INSUFFICIENT_BALANCE", async () => {
    const m = await newMerchant(database.db);
    await fund(database.db, m, 100n);
    const results = await Promise.allSettled(
      Array.from({ length: 500 }, () => holdRequest(m, newId("tx"), UNIT)),
    );
    const ok = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r) => r.status === "rejected");
    expect(ok).toHaveLength(100);
    expect(refused).toHaveLength(400);
    for (const r of refused) {
      const reason = (r as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(AppError);
      expect(reason.code).toBe("INSUFFICIENT_BALANCE");
    }
    const [b] = await getBalances(database.db, m, "sandbox");
    expect(b).toMatchObject({ available: 0n, held: 100n * UNIT });
    expect(await verifyLedger(database.db)).toMatchObject({ ok: true });
  });

  it("mixed holds, releases and settles in random order keep every unit accounted for", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            amount: fc.integer({ min: 1, max: 9 }),
            close: fc.constantFrom("release", "settle", "none"),
          }),
          {
            minLength: 20,
            maxLength: 60,
          },
        ),
        fc.integer({ min: 0, max: 1_000_000 }),
        async (ops, seed) => {
          const m = await newMerchant(database.db);
          await fund(database.db, m, 50n);
          // Phase 1: all holds at once.
          const holds = ops.map((op) => ({ ...op, id: newId("tx"), units: BigInt(op.amount) * UNIT }));
          const placed = await Promise.allSettled(holds.map((h) => holdRequest(m, h.id, h.units)));
          const held = holds.filter((_, i) => placed[i]?.status === "fulfilled");
          // Phase 2: closes (each twice, to exercise idempotency) and fresh holds, shuffled.
          const tasks: (() => Promise<unknown>)[] = [];
          for (const h of held) {
            if (h.close === "none") continue;
            const close = () =>
              database.db
                .transaction()
                .execute((trx) =>
                  h.close === "release"
                    ? releaseHold(trx, ctx(m, h.id), h.units)
                    : settleHold(trx, ctx(m, h.id), h.units, UNIT / 2n),
                );
            tasks.push(close, close);
          }
          for (let i = 0; i < 10; i++) tasks.push(() => holdRequest(m, newId("tx"), UNIT).catch(() => null));
          let s = seed;
          for (let i = tasks.length - 1; i > 0; i--) {
            s = (s * 1103515245 + 12345) % 2 ** 31;
            const j = s % (i + 1);
            [tasks[i], tasks[j]] = [tasks[j]!, tasks[i]!];
          }
          await Promise.all(tasks.map((t) => t()));

          const [b] = await getBalances(database.db, m, "sandbox");
          const settled = held.filter((h) => h.close === "settle").reduce((sum, h) => sum + h.units, 0n);
          // Every unit is still available, held, or left on settlement (net + fee).
          expect(b!.available + b!.held + settled).toBe(50n * UNIT);
          expect(b!.available >= 0n && b!.held >= 0n).toBe(true);
          const report = await verifyLedger(database.db);
          expect(report.problems).toEqual([]);
        },
      ),
      { numRuns: onPostgres ? 8 : 4 },
    );
  });

  it("the same hold requested concurrently posts once", async () => {
    const m = await newMerchant(database.db);
    await fund(database.db, m, 10n);
    const id = newId("tx");
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => holdRequest(m, id, 3n * UNIT)));
    expect(results.every((r) => r.status === "fulfilled")).toBe(true);
    const [b] = await getBalances(database.db, m, "sandbox");
    expect(b).toMatchObject({ available: 7n * UNIT, held: 3n * UNIT });
  });
});
