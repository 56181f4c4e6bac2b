import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AuthenticationError,
  IdempotencyMismatchError,
  InsufficientBalanceError,
  InvalidStateError,
  NotFoundError,
  PermissionError,
  type ResponseInfo,
  Stablegate,
  StablegateError,
  type Transaction,
  ValidationError,
} from "../../packages/sdk/src/index.js";
import { startTestService, type TestService } from "../support/harness.js";
import { waitFor } from "../webhooks/support.js";
import { createPayout, fund, type SdkMerchant, sdkMerchant, TRON_TO } from "./support/merchant.js";

// Every resource of the SDK against the real service (sandbox listener, simulator chains).
let svc: TestService;
let m: SdkMerchant;
const seen: ResponseInfo[] = [];
const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  m = await sdkMerchant(svc, { client: { onResponse: (info) => seen.push(info) } });
  await fund(m.client, 5000, TRC);
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

async function settled(id: string) {
  return waitFor(async () => {
    const w = await m.client.withdrawals.get(id);
    return w.status === "pending" || w.status === "processing" ? null : w;
  }, 20_000);
}

describe("resources", () => {
  it("account: the key pair's merchant and environment", async () => {
    const account = await m.client.account.get();
    expect(account.environment).toBe("sandbox");
    expect(account.clientId).toMatch(/^mer_/);
  });

  it("checkout sessions: create (with an automatic Idempotency-Key) and get; the simulator pays it", async () => {
    seen.length = 0;
    const created = await m.client.checkoutSessions.create({
      amount: 12.5,
      currencyType: TRC,
      orderId: "sdk-order-1",
      metadata: { cart: "42" },
    });
    expect(created).toMatchObject({
      amount: 12.5,
      status: "pending",
      orderId: "sdk-order-1",
      currencyType: TRC,
    });
    expect(created.id).toBe(created.transactionId);
    expect(created.checkoutUrl).toContain(`/pay/${created.id}`);
    // The SDK sent a key (a UUID) though the caller gave none, and the answer was not a replay.
    expect(seen[0]?.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[0]?.replayed).toBe(false);
    expect(seen[0]?.requestId).toBeTruthy();

    const payment = await m.client.sandbox.payCheckoutSession(created.id, { amount: 12.5 });
    expect(payment.amount).toBe(12.5);
    const confirmed = await waitFor(async () => {
      const s = await m.client.checkoutSessions.get(created.id);
      return s.status === "confirmed" ? s : null;
    });
    expect(confirmed.actualBalance).toBe(12.5);
    expect(confirmed.blockchainTxHash).toBeTruthy();
  });

  it("payment links: create (with an automatic Idempotency-Key), get, list, iterate and deactivate", async () => {
    seen.length = 0;
    const link = await m.client.paymentLinks.create({
      title: "SDK coffee",
      amount: 3,
      currencyTypes: [TRC],
      maxPayments: 5,
    });
    expect(link).toMatchObject({ title: "SDK coffee", amount: 3, active: true, payments: 0 });
    expect(link.url).toContain(`/l/${link.id}`);
    expect(seen[0]?.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect((await m.client.paymentLinks.get(link.id)).id).toBe(link.id);
    const page = await m.client.paymentLinks.list({ limit: 10 });
    expect(page.data.map((l) => l.id)).toContain(link.id);
    const all: string[] = [];
    for await (const l of m.client.paymentLinks.iterate({ limit: 1 })) all.push(l.id);
    expect(all).toContain(link.id);
    const closed = await m.client.paymentLinks.deactivate(link.id);
    expect(closed.active).toBe(false);
  });

  it("checkout sessions: the caller's own Idempotency-Key replays the first answer", async () => {
    seen.length = 0;
    const key = `order-${Date.now()}`;
    const first = await m.client.checkoutSessions.create(
      { amount: 3, currencyType: TRC },
      { idempotencyKey: key },
    );
    const again = await m.client.checkoutSessions.create(
      { amount: 3, currencyType: TRC },
      { idempotencyKey: key },
    );
    expect(again.id).toBe(first.id);
    expect(seen.map((s) => [s.idempotencyKey, s.replayed])).toEqual([
      [key, false],
      [key, true],
    ]);
  });

  it("wallets: generate an address; a simulated payment to it is a confirmed deposit", async () => {
    const wallet = await m.client.wallets.generate({
      currencyType: "USDT-ERC20",
      label: "alice",
      externalUserId: "user-42",
    });
    expect(wallet).toMatchObject({ currencyType: "USDT-ERC20", label: "alice", externalUserId: "user-42" });
    expect(wallet.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    await m.client.sandbox.payWallet(wallet.address, { amount: 4, currencyType: "USDT-ERC20" });
    const deposit = await waitFor(async () => {
      const page = await m.client.transactions.list({ type: "deposit", search: wallet.address });
      return page.data.find((t) => t.status === "confirmed");
    });
    expect(deposit.amount).toBe(4);
    expect(deposit.walletAddress?.toLowerCase()).toBe(wallet.address.toLowerCase());
  });

  it("balance: one entry per currency type", async () => {
    const lines = await m.client.balance.get();
    const trc = lines.find((l) => l.currencyType === TRC);
    expect(trc?.available).toBeGreaterThanOrEqual(5000);
    expect(trc?.total).toBe((trc?.available ?? 0) + (trc?.held ?? 0));
  });

  it("withdrawals: create (auto-executed) → completed; list, iterate, get", async () => {
    const created = await m.client.withdrawals.create({
      amount: 20,
      currencyType: TRC,
      walletAddress: TRON_TO,
      reference: "sdk-w-auto",
    });
    expect(created.status).toBe("processing");
    const done = await settled(created.id);
    expect(done.status).toBe("completed");
    const page = await m.client.withdrawals.list({ status: "completed", limit: 100 });
    expect(page.data.map((w) => w.id)).toContain(created.id);
    const all: string[] = [];
    for await (const w of m.client.withdrawals.iterate({ status: "completed", limit: 1 })) all.push(w.id);
    expect(all).toContain(created.id);
    expect(all.length).toBe(page.pagination.total);
  });

  it("withdrawals: over the threshold → pending; approve → completed; approving again is InvalidStateError", async () => {
    const pending = await m.client.withdrawals.create({
      amount: 1500,
      currencyType: TRC,
      walletAddress: TRON_TO,
    });
    expect(pending.status).toBe("pending");
    const listed = await m.client.withdrawals.list();
    expect(listed.data.map((w) => w.id)).toContain(pending.id);
    const approved = await m.client.withdrawals.approve(pending.id);
    expect(["processing", "completed"]).toContain(approved.status);
    expect((await settled(pending.id)).status).toBe("completed");
    const err = await m.client.withdrawals.approve(pending.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidStateError);
    expect(err).toMatchObject({ status: 409, code: "INVALID_STATE" });
  });

  it("withdrawals: reject with a reason (and without a body)", async () => {
    const a = await m.client.withdrawals.create({ amount: 1200, currencyType: TRC, walletAddress: TRON_TO });
    const rejected = await m.client.withdrawals.reject(a.id, { reason: "customer cancelled" });
    expect(rejected).toMatchObject({ status: "rejected", rejectionReason: "customer cancelled" });
    const b = await m.client.withdrawals.create({ amount: 1100, currencyType: TRC, walletAddress: TRON_TO });
    expect((await m.client.withdrawals.reject(b.id)).status).toBe("rejected");
  });

  it("payouts: get one and list (created on the dashboard with an e-mailed code)", async () => {
    const id = await createPayout(svc, m.bearer, { amount: 30, currencyType: TRC, walletAddress: TRON_TO });
    const done = await waitFor(async () => {
      const p = await m.client.payouts.get(id);
      return p.status === "completed" ? p : null;
    }, 20_000);
    expect(done).toMatchObject({ id, amount: 30, walletAddress: TRON_TO });
    const page = await m.client.payouts.list({ limit: 10 });
    expect(page.data.map((p) => p.id)).toContain(id);
    const ids: string[] = [];
    for await (const p of m.client.payouts.iterate()) ids.push(p.id);
    expect(ids).toContain(id);
  });

  it("transactions: get, and iterate walks every page (more than one) exactly once", async () => {
    for (let i = 0; i < 5; i++) await m.client.checkoutSessions.create({ amount: 1 + i, currencyType: TRC });
    const whole = await m.client.transactions.list({ limit: 100, order: "asc" });
    expect(whole.pagination.total).toBeGreaterThan(6);
    seen.length = 0;
    const walked: Transaction[] = [];
    for await (const t of m.client.transactions.iterate({ limit: 3, order: "asc" })) walked.push(t);
    expect(walked.map((t) => t.id)).toEqual(whole.data.map((t) => t.id));
    // One request per page, and more than one page.
    const pages = Math.ceil(whole.pagination.total / 3);
    expect(pages).toBeGreaterThan(1);
    expect(seen.map((s) => new URL(s.url).searchParams.get("page"))).toEqual(
      Array.from({ length: pages }, (_, i) => String(i + 1)),
    );
    // Breaking out of the loop stops fetching.
    seen.length = 0;
    for await (const _ of m.client.transactions.iterate({ limit: 2 })) break;
    expect(seen.length).toBe(1);
    const first = whole.data[0] as Transaction;
    expect(await m.client.transactions.get(first.id)).toMatchObject({ id: first.id, type: first.type });
  });
});

describe("typed errors", () => {
  it("400 ValidationError with the refused fields", async () => {
    const err = await m.client.checkoutSessions
      .create({ amount: -1, currencyType: TRC })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toBeInstanceOf(StablegateError);
    const v = err as ValidationError;
    expect(v.status).toBe(400);
    expect(v.code).toBe("VALIDATION_ERROR");
    expect(v.fields.map((f) => f.field)).toEqual(["amount"]);
    expect(v.fields[0]?.message).toBeTruthy();
    expect(v.requestId).toBeTruthy();
    const currency = await m.client.wallets
      .generate({ currencyType: "USDT-BEP20" as never })
      .catch((e: unknown) => e);
    expect(currency).toBeInstanceOf(ValidationError);
    expect((currency as ValidationError).fields.map((f) => f.field)).toEqual(["currencyType"]);
  });

  it("404 NotFoundError with the request id", async () => {
    const err = await m.client.checkoutSessions.get("tx_doesnotexist").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ status: 404, code: "NOT_FOUND" });
    expect((err as NotFoundError).requestId).toBeTruthy();
    expect(await m.client.transactions.get("tx_nope").catch((e: unknown) => e)).toBeInstanceOf(NotFoundError);
  });

  it("422 InsufficientBalanceError on a withdrawal above the balance", async () => {
    const err = await m.client.withdrawals
      .create({ amount: 900_000, currencyType: TRC, walletAddress: TRON_TO })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientBalanceError);
    expect(err).toMatchObject({ status: 422, code: "INSUFFICIENT_BALANCE" });
  });

  it("422 IdempotencyMismatchError: one key, two different bodies", async () => {
    const key = `mismatch-${Date.now()}`;
    await m.client.checkoutSessions.create({ amount: 2, currencyType: TRC }, { idempotencyKey: key });
    const err = await m.client.checkoutSessions
      .create({ amount: 3, currencyType: TRC }, { idempotencyKey: key })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdempotencyMismatchError);
    expect(err).toMatchObject({ status: 422, code: "IDEMPOTENCY_MISMATCH" });
  });

  it("401 AuthenticationError: a wrong secret, and no secret where one is required", async () => {
    const wrong = new Stablegate({
      apiKey: m.sandbox.apiKey,
      apiSecret: "sk_test_wrong",
      baseUrl: svc.urls.sandbox,
    });
    const e1 = await wrong.balance.get().catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(AuthenticationError);
    expect(e1).toMatchObject({ status: 401, code: "INVALID_AUTH" });
    const noSecret = new Stablegate({ apiKey: m.sandbox.apiKey, baseUrl: svc.urls.sandbox });
    expect((await noSecret.balance.get()).length).toBeGreaterThan(0);
    const e2 = await noSecret.withdrawals
      .create({ amount: 5, currencyType: TRC, walletAddress: TRON_TO })
      .catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(AuthenticationError);
  });

  it("403 PermissionError: the production pair on the sandbox base URL", async () => {
    const other = new Stablegate({
      apiKey: m.production.apiKey,
      apiSecret: m.production.apiSecret,
      baseUrl: svc.urls.sandbox,
    });
    const err = await other.balance.get().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermissionError);
    expect(err).toMatchObject({ status: 403, code: "FORBIDDEN" });
  });

  it("the environment comes from the key's prefix when no base URL is given", () => {
    expect(new Stablegate({ apiKey: m.sandbox.apiKey }).baseUrl).toBe("http://localhost:8081");
    expect(new Stablegate({ apiKey: m.production.apiKey }).baseUrl).toBe("http://localhost:8080");
    expect(new Stablegate({ apiKey: m.production.apiKey, environment: "sandbox" }).environment).toBe(
      "sandbox",
    );
    expect(() => new Stablegate({ apiKey: "" })).toThrow(TypeError);
    expect(() => new Stablegate({ apiKey: "unprefixed" })).toThrow(/baseUrl or environment/);
  });
});
