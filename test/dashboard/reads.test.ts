import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin } from "../../src/auth/index.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import type { TransactionStatus, TransactionType } from "../../src/domain/transaction.js";
import { creditDeposit, holdFunds } from "../../src/ledger/operations.js";
import { insertTransaction } from "../../src/transactions/index.js";
import { requestTransfer } from "../support/backed-transfer.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { Browser } from "./support.js";

// docs/api-reference.md#dashboard: the dashboard channel reads the same balances and transactions as the
// API-key channel, for the environment of X-Environment (else the base URL); admins read across
// merchants under /api/v1/admin/transactions.

const PASSWORD = "correct horse battery";
let svc: TestService;
let n = 0;

interface Account {
  b: Browser;
  merchantId: string;
  keys: Record<"production" | "sandbox", { apikey: string; "x-api-secret": string }>;
}

async function account(): Promise<Account> {
  const b = new Browser(svc.urls.production);
  const r = await b.req("/api/v1/auth/register", {
    json: { email: `reads${++n}-${Date.now()}@example.com`, password: PASSWORD, companyName: "Reads Co" },
  });
  expect(r.status, r.text).toBe(201);
  const keys = Object.fromEntries(
    (r.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[]).map((k) => [
      k.environment,
      { apikey: k.apiKey, "x-api-secret": k.apiSecret },
    ]),
  ) as Account["keys"];
  return { b, merchantId: r.body.data.user.merchantId, keys };
}

async function addTx(
  merchantId: string,
  t: {
    type: TransactionType;
    status: TransactionStatus;
    amount: bigint;
    env?: "sandbox" | "production";
    currencyType?: CurrencyType;
    orderId?: string;
    reference?: string;
    createdAt?: Date;
    confirmedAt?: Date;
  },
): Promise<string> {
  const id = newId("tx");
  const env = t.env ?? "sandbox";
  const currencyType = t.currencyType ?? "USDT-TRC20";
  await svc.database.db.transaction().execute(async (trx) => {
    await insertTransaction(trx, {
      id,
      merchantId,
      environment: env,
      type: t.type,
      status: t.status,
      currencyType,
      amount: t.amount,
      fee: t.type === "deposit" ? 0n : UNIT,
      actualBalance: t.type === "deposit" ? t.amount : null,
      orderId: t.orderId ?? null,
      reference: t.reference ?? null,
      walletAddress: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
      ...(t.createdAt ? { createdAt: t.createdAt } : {}),
      ...(t.confirmedAt ? { confirmedAt: t.confirmedAt } : {}),
    });
    const c = { merchantId, environment: env, currencyType, transactionId: id };
    if (t.type === "deposit" && t.status === "confirmed") await creditDeposit(trx, c, t.amount, 0n);
    if (t.type !== "deposit" && t.status === "pending") await holdFunds(trx, c, t.amount);
  });
  return id;
}

const DAY = 86_400_000;
const sandbox = { "x-environment": "sandbox" };
let alice: Account;
let bob: Account;
const ids: Record<string, string> = {};

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_AUTH: "10000" } });
  alice = await account();
  bob = await account();
  const now = Date.now();
  ids.dep = await addTx(alice.merchantId, {
    type: "deposit",
    status: "confirmed",
    amount: 100n * UNIT,
    orderId: "order-1",
    createdAt: new Date(now - 2 * DAY),
    confirmedAt: new Date(now - 2 * DAY),
  });
  ids.dep2 = await addTx(alice.merchantId, {
    type: "deposit",
    status: "confirmed",
    amount: 25_500_000n,
    currencyType: "USDT-ERC20",
    orderId: "order-2",
    createdAt: new Date(now - DAY),
    confirmedAt: new Date(now - DAY),
  });
  ids.wd = await addTx(alice.merchantId, {
    type: "withdrawal",
    status: "pending",
    amount: 10n * UNIT,
    reference: "50%_off\\(promo).*",
    createdAt: new Date(now - 1000),
  });
  ids.pendingDep = await addTx(alice.merchantId, {
    type: "deposit",
    status: "pending",
    amount: 7n * UNIT,
    createdAt: new Date(now - 500),
  });
  ids.prod = await addTx(alice.merchantId, {
    type: "deposit",
    status: "confirmed",
    amount: 3n * UNIT,
    env: "production",
    orderId: "order-prod",
  });
  ids.bob = await addTx(bob.merchantId, {
    type: "deposit",
    status: "confirmed",
    amount: 50n * UNIT,
    orderId: "order-bob",
  });
});
afterAll(async () => {
  await svc?.close();
});

describe("GET /api/v1/dashboard/balance", () => {
  it("answers the same balances as the API-key channel, per environment chosen by X-Environment", async () => {
    const dash = await alice.b.req("/api/v1/dashboard/balance", { headers: sandbox });
    expect(dash.status, dash.text).toBe(200);
    const api = await call(svc.urls.sandbox, "/api/v1/public/balance", { headers: alice.keys.sandbox });
    expect(api.status).toBe(200);
    expect(dash.body.data).toEqual(api.body.data);
    expect(dash.body.data).toEqual([
      { currencyType: "USDT-TRC20", available: 90, held: 10, total: 100 },
      { currencyType: "USDT-ERC20", available: 25.5, held: 0, total: 25.5 },
    ]);
    // Production (the base URL this browser uses, and X-Environment: production) has its own money.
    const prod = await alice.b.req("/api/v1/dashboard/balance");
    expect(prod.body.data[0]).toEqual({ currencyType: "USDT-TRC20", available: 3, held: 0, total: 3 });
    const prodHeader = await alice.b.req("/api/v1/dashboard/balance", {
      headers: { "x-environment": "production" },
    });
    expect(prodHeader.body.data).toEqual(prod.body.data);
  });

  it("needs a dashboard session: none, an API key pair, or a bad X-Environment are refused", async () => {
    const none = await call(svc.urls.production, "/api/v1/dashboard/balance");
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ success: false, error: { code: "INVALID_AUTH" } });
    const byKey = await call(svc.urls.sandbox, "/api/v1/dashboard/balance", { headers: alice.keys.sandbox });
    expect(byKey.status).toBe(401);
    const badEnv = await alice.b.req("/api/v1/dashboard/balance", { headers: { "x-environment": "test" } });
    expect(badEnv.status).toBe(400);
    expect(badEnv.body.error.details.fields[0].field).toBe("X-Environment");
  });

  it("works with Authorization: Bearer (non-browser clients) and carries the dashboard tier", async () => {
    const login = await call(svc.urls.sandbox, "/api/v1/auth/login", {
      json: { email: (await alice.b.req("/api/v1/auth/me")).body.data.user.email, password: PASSWORD },
      headers: { "x-token-delivery": "bearer" },
    });
    expect(login.status).toBe(200);
    const r = await call(svc.urls.sandbox, "/api/v1/dashboard/balance", {
      headers: { authorization: `Bearer ${login.body.data.accessToken}` },
    });
    expect(r.status).toBe(200);
    expect(r.body.data[0].total).toBe(100); // the sandbox base URL → sandbox data
    expect(r.headers.get("ratelimit-policy")).toBe("200;w=900");
  });
});

describe("GET /api/v1/dashboard/transactions", () => {
  it("lists the environment's transactions exactly as the API-key channel does, for the same query", async () => {
    for (const query of [
      "",
      "?type=deposit",
      "?status=confirmed&sortBy=amount&order=asc",
      "?currencyType=USDT-ERC20",
      "?limit=2&page=2",
      `?search=${encodeURIComponent("50%_off\\(promo).*")}`,
    ]) {
      const dash = await alice.b.req(`/api/v1/dashboard/transactions${query}`, { headers: sandbox });
      const api = await call(svc.urls.sandbox, `/api/v1/public/transactions${query}`, {
        headers: alice.keys.sandbox,
      });
      expect(dash.status, dash.text).toBe(200);
      expect(dash.body, query).toEqual(api.body);
    }
  });

  it("filters, searches literally, sorts and paginates", async () => {
    const all = await alice.b.req("/api/v1/dashboard/transactions", { headers: sandbox });
    expect(all.body.data.map((t: { id: string }) => t.id)).toEqual([
      ids.pendingDep,
      ids.wd,
      ids.dep2,
      ids.dep,
    ]);
    expect(all.body.pagination).toEqual({ page: 1, limit: 20, total: 4, totalPages: 1 });
    const literal = await alice.b.req(`/api/v1/dashboard/transactions?search=${encodeURIComponent("%")}`, {
      headers: sandbox,
    });
    expect(literal.body.data.map((t: { id: string }) => t.id)).toEqual([ids.wd]);
    const byOrder = await alice.b.req("/api/v1/dashboard/transactions?search=ORDER-2", { headers: sandbox });
    expect(byOrder.body.data.map((t: { id: string }) => t.id)).toEqual([ids.dep2]);
    const page = await alice.b.req("/api/v1/dashboard/transactions?limit=1&page=3&sortBy=amount&order=desc", {
      headers: sandbox,
    });
    // Amounts 100, 25.5, 10, 7: the third page of one is the withdrawal of 10.
    expect(page.body.data.map((t: { id: string }) => t.id)).toEqual([ids.wd]);
    const from = new Date(Date.now() - 1.5 * DAY).toISOString();
    const since = await alice.b.req(`/api/v1/dashboard/transactions?from=${encodeURIComponent(from)}`, {
      headers: sandbox,
    });
    expect(since.body.pagination.total).toBe(3);
  });

  it("never shows another merchant's or the other environment's transactions", async () => {
    const prod = await alice.b.req("/api/v1/dashboard/transactions", {
      headers: { "x-environment": "production" },
    });
    expect(prod.body.data.map((t: { id: string }) => t.id)).toEqual([ids.prod]);
    const search = await alice.b.req("/api/v1/dashboard/transactions?search=order-bob", { headers: sandbox });
    expect(search.body.data).toEqual([]);
  });

  it("rejects bad filters with 400 VALIDATION_ERROR", async () => {
    for (const q of ["?status=done", "?type=refund", "?from=yesterday", "?page=0"]) {
      const r = await alice.b.req(`/api/v1/dashboard/transactions${q}`, { headers: sandbox });
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
    }
    const from = new Date().toISOString();
    const to = new Date(Date.now() - DAY).toISOString();
    const inverted = await alice.b.req(
      `/api/v1/dashboard/transactions?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
      { headers: sandbox },
    );
    expect(inverted.status).toBe(400);
    expect(inverted.body.error.details.fields).toEqual([{ field: "from", message: "must not be after to" }]);
  });
});

describe("GET /api/v1/dashboard/transactions/:id", () => {
  it("answers one transaction like the API-key channel", async () => {
    const dash = await alice.b.req(`/api/v1/dashboard/transactions/${ids.wd}`, { headers: sandbox });
    const api = await call(svc.urls.sandbox, `/api/v1/public/transactions/${ids.wd}`, {
      headers: alice.keys.sandbox,
    });
    expect(dash.status).toBe(200);
    expect(dash.body).toEqual(api.body);
    expect(dash.body.data).toMatchObject({
      id: ids.wd,
      type: "withdrawal",
      status: "pending",
      amount: 10,
      fee: 1,
      netAmount: 9,
    });
  });

  it("404 for another merchant's id and for the other environment's", async () => {
    const other = await alice.b.req(`/api/v1/dashboard/transactions/${ids.bob}`, { headers: sandbox });
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe("NOT_FOUND");
    const env = await alice.b.req(`/api/v1/dashboard/transactions/${ids.prod}`, { headers: sandbox });
    expect(env.status).toBe(404);
    const mine = await alice.b.req(`/api/v1/dashboard/transactions/${ids.prod}`, {
      headers: { "x-environment": "production" },
    });
    expect(mine.status).toBe(200);
  });
});

describe("GET /api/v1/dashboard/volume", () => {
  it("sums confirmed deposits per UTC day and currency; pending ones and other environments are left out", async () => {
    const r = await alice.b.req("/api/v1/dashboard/volume?days=7", { headers: sandbox });
    expect(r.status, r.text).toBe(200);
    const day = (offset: number) => new Date(Date.now() - offset).toISOString().slice(0, 10);
    expect(r.body.data).toEqual([
      { date: day(2 * DAY), currencyType: "USDT-TRC20", incoming: 100, outgoing: 0, count: 1 },
      { date: day(DAY), currencyType: "USDT-ERC20", incoming: 25.5, outgoing: 0, count: 1 },
    ]);
    const short = await alice.b.req("/api/v1/dashboard/volume?days=1", { headers: sandbox });
    expect(short.body.data).toEqual([]);
    const bad = await alice.b.req("/api/v1/dashboard/volume?days=0", { headers: sandbox });
    expect(bad.status).toBe(400);
  });

  it("counts completed withdrawals and payouts as outgoing", async () => {
    const carol = await account();
    const now = new Date();
    await addTx(carol.merchantId, {
      type: "deposit",
      status: "confirmed",
      amount: 20n * UNIT,
      confirmedAt: now,
    });
    await addTx(carol.merchantId, {
      type: "payout",
      status: "completed",
      amount: 5n * UNIT,
      confirmedAt: now,
    });
    await addTx(carol.merchantId, { type: "withdrawal", status: "failed", amount: 4n * UNIT });
    const r = await carol.b.req("/api/v1/dashboard/volume", { headers: sandbox });
    expect(r.body.data).toEqual([
      {
        date: now.toISOString().slice(0, 10),
        currencyType: "USDT-TRC20",
        incoming: 20,
        outgoing: 5,
        count: 2,
      },
    ]);
  });
});

describe("GET /api/v1/admin/transactions", () => {
  let admin: Browser;
  beforeAll(async () => {
    const email = `admin-reads-${Date.now()}@example.com`;
    await createAdmin(svc.database.db, { email, password: PASSWORD });
    admin = new Browser(svc.urls.production);
    const r = await admin.req("/api/v1/auth/login", { json: { email, password: PASSWORD } });
    expect(r.status, r.text).toBe(200);
  });

  it("lists across merchants and environments, filtered by merchantId, environment and the usual filters", async () => {
    const all = await admin.req("/api/v1/admin/transactions?limit=100");
    expect(all.status, all.text).toBe(200);
    const seen = new Set(all.body.data.map((t: { id: string }) => t.id));
    for (const id of [ids.dep, ids.prod, ids.bob]) expect(seen.has(id)).toBe(true);
    const bobs = await admin.req(`/api/v1/admin/transactions?merchantId=${bob.merchantId}`);
    expect(bobs.body.data).toHaveLength(1);
    expect(bobs.body.data[0]).toMatchObject({
      id: ids.bob,
      merchantId: bob.merchantId,
      environment: "sandbox",
      clientId: bob.merchantId,
      amount: 50,
    });
    const aliceProd = await admin.req(
      `/api/v1/admin/transactions?merchantId=${alice.merchantId}&environment=production`,
    );
    expect(aliceProd.body.data.map((t: { id: string }) => t.id)).toEqual([ids.prod]);
    const search = await admin.req(`/api/v1/admin/transactions?search=${encodeURIComponent("_off\\(")}`);
    expect(search.body.data.map((t: { id: string }) => t.id)).toEqual([ids.wd]);
    const pending = await admin.req(
      `/api/v1/admin/transactions?merchantId=${alice.merchantId}&status=pending`,
    );
    expect(pending.body.pagination.total).toBe(2);
    const bad = await admin.req("/api/v1/admin/transactions?environment=staging");
    expect(bad.status).toBe(400);
  });

  it("reads one transaction of any merchant; unknown id → 404", async () => {
    const r = await admin.req(`/api/v1/admin/transactions/${ids.bob}`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id: ids.bob, merchantId: bob.merchantId, orderId: "order-bob" });
    const missing = await admin.req("/api/v1/admin/transactions/tx_nope");
    expect(missing.status).toBe(404);
  });

  it("chain-costs: what the gateway's own transfers cost, per currency type, environment, month and purpose (issue #38)", async () => {
    const db = svc.database.db;
    const transfers: [string, "sweep" | "gas_topup" | "withdrawal", bigint, bigint][] = [
      ["swp_cost_1", "sweep", 0n, 64_285n], // on delegated energy: burned nothing
      ["gtp_cost_1", "gas_topup", 1_100_000n, 0n], // the fresh address's creation
      ["tx_cost_1", "withdrawal", 345_000n, 130_285n], // its bandwidth
    ];
    await db.transaction().execute(async (trx) => {
      for (const [intentId, kind, , ,] of transfers)
        await requestTransfer(trx, {
          intentId,
          kind,
          network: "USDT-TRC20",
          environment: "production",
          to: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW",
          amount: 1_000_000n,
          ...(kind === "sweep" ? { fromIndex: 100 } : {}),
        });
    });
    for (const [intentId, , fee, used] of transfers)
      await db
        .updateTable("outgoing_transfers")
        .set({ status: "confirmed", fee_paid: fee, resource_used: used, finished_at: new Date() })
        .where("intent_id", "=", intentId)
        .execute();
    const r = await admin.req("/api/v1/admin/chain-costs");
    expect(r.status, r.text).toBe(200);
    const month = new Date().toISOString().slice(0, 7);
    const mine = r.body.data.filter(
      (c: { currencyType: string; environment: string }) =>
        c.currencyType === "USDT-TRC20" && c.environment === "production",
    );
    const trx = { name: "TRX", decimals: 6 };
    const base = { currencyType: "USDT-TRC20", environment: "production", month, nativeUnit: trx };
    expect(mine).toEqual([
      {
        ...base,
        purpose: "collection",
        transfers: 2,
        fee: "1100000",
        rental: "0",
        used: "64285",
        unburned: 1,
        served: 1,
        feePerServed: "1100000",
      },
      {
        ...base,
        purpose: "outgoing",
        transfers: 1,
        fee: "345000",
        rental: "0",
        used: "130285",
        unburned: 0,
        served: 1,
        feePerServed: "345000",
      },
    ]);
    for (const q of ["months=0", "months=121", "months=three", "months=1.5"]) {
      const bad = await admin.req(`/api/v1/admin/chain-costs?${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.error.code, q).toBe("VALIDATION_ERROR");
    }
    expect((await alice.b.req("/api/v1/admin/chain-costs")).status).toBe(403);
    expect((await call(svc.urls.production, "/api/v1/admin/chain-costs")).status).toBe(401);
  });

  it("is refused to merchants (403), to anonymous callers (401), and read-only for admins (403 on writes)", async () => {
    const merchant = await alice.b.req("/api/v1/admin/transactions");
    expect(merchant.status).toBe(403);
    expect(merchant.body.error.code).toBe("FORBIDDEN");
    const anon = await call(svc.urls.production, "/api/v1/admin/transactions");
    expect(anon.status).toBe(401);
    const write = await admin.req(`/api/v1/admin/transactions/${ids.bob}`, { method: "DELETE" });
    expect(write.status).toBe(403);
    // …and the admin cannot use the merchant reads.
    const dash = await admin.req("/api/v1/dashboard/balance");
    expect(dash.status).toBe(403);
  });
});
