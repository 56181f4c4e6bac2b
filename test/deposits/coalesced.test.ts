import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { CheckoutSessionInserts, createCheckoutSession } from "../../src/deposits/create.js";
import { DEFAULT_FEE_SCHEDULE } from "../../src/domain/fees.js";
import {
  ApiKeyLookups,
  type CreatedMerchant,
  createMerchantWithKeys,
  revokeApiKey,
} from "../../src/merchants/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { DepositIndexReserve } from "../../src/wallet/index-reserve.js";
import { openTestDatabase } from "../support/db.js";

// Coalescing on the hottest path: concurrent session creations share one insert statement and
// concurrent API-key lookups one select — each caller still gets exactly its own row.
const deriver = AddressDeriver.fromMnemonic("test test test test test test test test test test test junk");
let database: Database;
let merchant: CreatedMerchant;

beforeAll(async () => {
  database = await openTestDatabase(8);
  merchant = await createMerchantWithKeys(database.db, {
    email: `coalesce-${Date.now()}@example.com`,
    companyName: "C",
  });
});
afterAll(async () => {
  await database?.close();
});

const input = (i: number) => ({
  amount: BigInt(1_000_000 + i),
  currencyType: "USDT-TRC20" as const,
  lifetimeMs: 30 * 60_000,
  callbackUrl: null,
  orderId: `order-${i}`,
  metadata: { i },
});

/** Creation dependencies with the given coalesced inserts. */
const depsWith = (inserts: CheckoutSessionInserts) => ({
  deriver,
  indexes: new DepositIndexReserve(),
  fees: DEFAULT_FEE_SCHEDULE,
  latePaymentWatchHours: 168,
  inserts,
});

describe("coalesced checkout session inserts", () => {
  it("concurrent creations share statements and each gets its own session", async () => {
    const db = database.db;
    const deps = depsWith(new CheckoutSessionInserts(db));
    const scope = { merchantId: merchant.id, environment: "sandbox" as const };
    const N = 24;
    const made = await Promise.all(
      Array.from({ length: N }, (_, i) => createCheckoutSession(db, deps, scope, input(i), new Date())),
    );
    expect(new Set(made.map((s) => s.transaction.id)).size).toBe(N);
    expect(new Set(made.map((s) => s.address)).size).toBe(N);
    made.forEach((s, i) => {
      expect(s.transaction.amount).toBe(BigInt(1_000_000 + i));
      expect(s.transaction.orderId).toBe(`order-${i}`);
      expect(s.transaction.walletAddress).toBe(s.address);
    });
    const rows = await db
      .selectFrom("checkout_sessions as s")
      .innerJoin("transactions as t", "t.id", "s.id")
      .innerJoin("watched_addresses as w", "w.reference_id", "s.id")
      .select(["s.id", "s.address", "t.amount", "t.order_id", "w.address as watched"])
      .select(sql<string>`s.xmin::text`.as("tx"))
      .where(
        "s.id",
        "in",
        made.map((s) => s.transaction.id),
      )
      .execute();
    expect(rows).toHaveLength(N);
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const s of made) {
      const row = byId.get(s.transaction.id);
      expect(row?.address).toBe(s.address);
      expect(row?.watched).toBe(s.address);
      expect(BigInt(row?.amount ?? -1)).toBe(s.transaction.amount);
    }
    // Rows written by one statement share its transaction id: fewer transactions than sessions.
    expect(new Set(rows.map((r) => r.tx)).size).toBeLessThan(N);
  });

  it("a bad row in a shared statement fails only its own creation", async () => {
    const db = database.db;
    const deps = depsWith(new CheckoutSessionInserts(db, { maxInFlight: 1 }));
    const scope = { merchantId: merchant.id, environment: "sandbox" as const };
    // A merchant that does not exist violates a foreign key: only that session fails.
    const ghost = { merchantId: "mer_does_not_exist", environment: "sandbox" as const };
    const settled = await Promise.allSettled([
      createCheckoutSession(db, deps, scope, input(100), new Date()),
      createCheckoutSession(db, deps, scope, input(101), new Date()),
      createCheckoutSession(db, deps, ghost, input(102), new Date()),
      createCheckoutSession(db, deps, scope, input(103), new Date()),
    ]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    const orders = await db
      .selectFrom("transactions")
      .select("order_id")
      .where("order_id", "in", ["order-100", "order-101", "order-102", "order-103"])
      .orderBy("order_id")
      .execute();
    expect(orders.map((o) => o.order_id)).toEqual(["order-100", "order-101", "order-103"]);
  });

  it("inside a transaction the insert is not shared: it rolls back with the transaction", async () => {
    const db = database.db;
    const deps = depsWith(new CheckoutSessionInserts(db));
    const scope = { merchantId: merchant.id, environment: "sandbox" as const };
    await expect(
      db.transaction().execute(async (trx) => {
        await createCheckoutSession(trx, deps, scope, input(200), new Date());
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    const found = await db
      .selectFrom("transactions")
      .select("id")
      .where("order_id", "=", "order-200")
      .execute();
    expect(found).toEqual([]);
  });
});

describe("coalesced API-key lookups", () => {
  it("concurrent lookups of several keys, repeated and unknown ones, each get their own answer", async () => {
    const db = database.db;
    const other = await createMerchantWithKeys(db, {
      email: `coalesce-o-${Date.now()}@example.com`,
      companyName: "O",
    });
    const lookups = new ApiKeyLookups(db, { maxInFlight: 1 });
    const [sandbox, production] = [merchant.keys[0], merchant.keys[1]];
    const otherKey = other.keys[0];
    if (!sandbox || !production || !otherKey) throw new Error("keys missing");
    const asked = [sandbox.apiKey, production.apiKey, "pk_unknown_key", otherKey.apiKey, sandbox.apiKey];
    const found = await Promise.all(asked.map((k) => lookups.find(k)));
    expect(found.map((f) => f && [f.id, f.merchantId, f.environment, f.status])).toEqual([
      [sandbox.id, merchant.id, sandbox.environment, "active"],
      [production.id, merchant.id, production.environment, "active"],
      undefined,
      [otherKey.id, other.id, otherKey.environment, "active"],
      [sandbox.id, merchant.id, sandbox.environment, "active"],
    ]);
    // No cache: a revocation committed before a lookup is seen by it.
    expect(await revokeApiKey(db, otherKey.id, "revoked")).toBe(true);
    expect((await lookups.find(otherKey.apiKey))?.status).toBe("revoked");
  });
});
