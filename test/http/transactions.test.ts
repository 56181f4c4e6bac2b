import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CurrencyType } from "../../src/domain/currency.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import type { TransactionStatus, TransactionType } from "../../src/domain/transaction.js";
import { creditDeposit, holdFunds } from "../../src/ledger/operations.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { insertTransaction } from "../../src/transactions/index.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

let svc: TestService;
let merchant: CreatedMerchant;
let other: CreatedMerchant;
let headers: Record<string, string>;
const ids: Record<string, string> = {};

async function addTx(
  m: CreatedMerchant,
  label: string,
  t: {
    type: TransactionType;
    status: TransactionStatus;
    amount: bigint;
    currencyType?: CurrencyType;
    reference?: string;
    orderId?: string;
    env?: "sandbox" | "production";
  },
) {
  const id = newId("tx");
  ids[label] = id;
  await svc.database.db.transaction().execute(async (trx) => {
    const env = t.env ?? "sandbox";
    const currencyType = t.currencyType ?? "USDT-TRC20";
    await insertTransaction(trx, {
      id,
      merchantId: m.id,
      environment: env,
      type: t.type,
      status: t.status,
      currencyType,
      amount: t.amount,
      fee: t.type === "deposit" ? 0n : UNIT,
      actualBalance: t.type === "deposit" ? t.amount : null,
      reference: t.reference ?? null,
      orderId: t.orderId ?? null,
      walletAddress: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
    });
    const c = { merchantId: m.id, environment: env, currencyType, transactionId: id };
    if (t.type === "deposit" && t.status === "confirmed") await creditDeposit(trx, c, t.amount, 0n);
    if (t.type !== "deposit" && t.status === "pending") await holdFunds(trx, c, t.amount);
  });
  await new Promise((r) => setTimeout(r, 5)); // distinct createdAt
}

beforeAll(async () => {
  svc = await startTestService();
  merchant = await svc.createMerchant();
  other = await svc.createMerchant();
  const k = keysOf(merchant, "sandbox");
  headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
  await addTx(merchant, "dep1", {
    type: "deposit",
    status: "confirmed",
    amount: 100n * UNIT,
    orderId: "order-1",
  });
  await addTx(merchant, "dep2", {
    type: "deposit",
    status: "confirmed",
    amount: 25_500_000n,
    currencyType: "USDT-ERC20",
    orderId: "order-2",
  });
  await addTx(merchant, "wd1", {
    type: "withdrawal",
    status: "pending",
    amount: 10n * UNIT,
    reference: "50%_off\\(promo).*",
  });
  // "xay" would match the pattern x_y if `_` were a wildcard; "50 off" would match 50%off.
  await addTx(merchant, "wd2", {
    type: "withdrawal",
    status: "failed",
    amount: 3n * UNIT,
    reference: "xay 50 off",
  });
  await addTx(merchant, "po1", { type: "payout", status: "completed", amount: 7n * UNIT, reference: "x_y" });
  await addTx(merchant, "prod", {
    type: "deposit",
    status: "confirmed",
    amount: 1n * UNIT,
    env: "production",
  });
  await addTx(other, "foreign", { type: "deposit", status: "confirmed", amount: 5n * UNIT });
});
afterAll(() => svc?.close());

const list = (q = "") => call(svc.urls.sandbox, `/api/v1/public/transactions${q}`, { headers });

describe("GET /api/v1/public/balance", () => {
  it("shows available, held and total per currency type in USDT", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/balance", { headers });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([
      { currencyType: "USDT-TRC20", available: 90, held: 10, total: 100 },
      { currencyType: "USDT-ERC20", available: 25.5, held: 0, total: 25.5 },
    ]);
    const prod = keysOf(merchant, "production");
    const p = await call(svc.urls.production, "/api/v1/public/balance", { headers: { apikey: prod.apiKey } });
    expect(p.body.data[0]).toEqual({ currencyType: "USDT-TRC20", available: 1, held: 0, total: 1 });
  });

  it("requires credentials", async () => {
    expect((await call(svc.urls.sandbox, "/api/v1/public/balance")).status).toBe(401);
  });
});

describe("GET /api/v1/public/transactions", () => {
  it("lists this merchant's transactions of this environment, newest first, in the published Transaction shape", async () => {
    const r = await list();
    expect(r.status).toBe(200);
    expect(r.body.pagination).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1 });
    expect(r.body.data.map((t: { id: string }) => t.id)).toEqual([
      ids.po1,
      ids.wd2,
      ids.wd1,
      ids.dep2,
      ids.dep1,
    ]);
    const dep = r.body.data.find((t: { id: string }) => t.id === ids.dep2);
    expect(dep).toEqual({
      type: "deposit",
      transactionId: ids.dep2,
      id: ids.dep2,
      clientId: merchant.id,
      amount: 25.5,
      fee: 0,
      netAmount: 25.5,
      actualBalance: 25.5,
      currencyType: "USDT-ERC20",
      network: "USDT-ERC20",
      status: "confirmed",
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updatedAt: expect.any(String),
      confirmedAt: null,
      blockchainTxHash: null,
      walletAddress: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
      orderId: "order-2",
      reference: null,
      externalUserId: null,
      checkoutSessionId: null,
    });
    const wd = r.body.data.find((t: { id: string }) => t.id === ids.wd1);
    expect(wd).toMatchObject({ amount: 10, fee: 1, netAmount: 9, actualBalance: null });
  });

  it("filters by type, status, currency type and time", async () => {
    const ofIds = (r: { body: { data: { id: string }[] } }) => r.body.data.map((t) => t.id).sort();
    expect(ofIds(await list("?type=withdrawal"))).toEqual([ids.wd1, ids.wd2].sort());
    expect(ofIds(await list("?type=withdrawal&status=pending"))).toEqual([ids.wd1]);
    expect(ofIds(await list("?currencyType=USDT-ERC20"))).toEqual([ids.dep2]);
    expect((await list("?from=2000-01-01T00:00:00Z&to=2001-01-01T00:00:00Z")).body.data).toEqual([]);
    expect(
      (await list(`?to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.pagination
        .total,
    ).toBe(5);
  });

  it("searches literally: pattern characters match only themselves", async () => {
    const found = async (s: string) =>
      (await list(`?search=${encodeURIComponent(s)}`)).body.data.map((t: { id: string }) => t.id).sort();
    expect(await found("%")).toEqual([ids.wd1]);
    expect(await found("x_y")).toEqual([ids.po1]); // not "xay"
    expect(await found("50%")).toEqual([ids.wd1]); // not "50 off"
    expect(await found("_off")).toEqual([ids.wd1]); // not " off"
    expect(await found(".*")).toEqual([ids.wd1]);
    expect(await found("(")).toEqual([ids.wd1]);
    expect(await found("\\")).toEqual([ids.wd1]);
    expect(await found("50%_off\\(promo).*")).toEqual([ids.wd1]);
    expect(await found("ORDER-1")).toEqual([ids.dep1]); // case-insensitive
    expect(await found(ids.wd2!)).toEqual([ids.wd2]);
    expect(await found("no-such-thing")).toEqual([]);
    expect(await found("%%")).toEqual([]);
    expect(await found(ids.foreign!)).toEqual([]); // another merchant's id is never found
  });

  it("sorts by the allowed fields, falls back to createdAt, paginates with the cap", async () => {
    const asc = await list("?sortBy=amount&order=asc");
    expect(asc.body.data.map((t: { amount: number }) => t.amount)).toEqual([3, 7, 10, 25.5, 100]);
    const fallback = await list("?sortBy=secret_column&order=asc");
    expect(fallback.body.data.map((t: { id: string }) => t.id)).toEqual([
      ids.dep1,
      ids.dep2,
      ids.wd1,
      ids.wd2,
      ids.po1,
    ]);
    const page2 = await list("?limit=2&page=2");
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3 });
    expect(page2.body.data.map((t: { id: string }) => t.id)).toEqual([ids.wd1, ids.dep2]);
    expect((await list("?limit=1000")).body.pagination.limit).toBe(100);
  });

  it("refuses bad filters with 400 naming the field", async () => {
    for (const [q, field] of [
      ["?type=refund", "type"],
      ["?status=lost", "status"],
      ["?currencyType=BTC", "currencyType"],
      ["?from=yesterday", "from"],
      ["?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"],
      [`?search=${"x".repeat(201)}`, "search"],
    ] as const) {
      const r = await list(q);
      expect(r.status, q).toBe(400);
      expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
  });
});

describe("GET /api/v1/public/transactions/{id}", () => {
  it("returns one transaction", async () => {
    const r = await call(svc.urls.sandbox, `/api/v1/public/transactions/${ids.wd1}`, { headers });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      id: ids.wd1,
      type: "withdrawal",
      status: "pending",
      reference: "50%_off\\(promo).*",
    });
  });

  it("answers 404 for another merchant's id, the other environment's id and unknown ids", async () => {
    for (const id of [ids.foreign, ids.prod, "tx_unknown"]) {
      const r = await call(svc.urls.sandbox, `/api/v1/public/transactions/${id}`, { headers });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("NOT_FOUND");
    }
  });
});
