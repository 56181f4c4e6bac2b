import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ChainUnavailableError,
  ConnectionError,
  RateLimitError,
  type ResponseInfo,
  ServiceUnavailableError,
  Stablegate,
  TimeoutError,
} from "../../packages/sdk/src/index.js";
import { keysOf, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { startDropProxy } from "./support/drop-proxy.js";
import { fund, type SdkMerchant, sdkMerchant, TRON_TO } from "./support/merchant.js";

const TRC = "USDT-TRC20";

describe("retry on 429, honouring Retry-After (a real rate limit: 3 requests per 2 s)", () => {
  let svc: TestService;
  let apiKey: string;
  let apiSecret: string;
  beforeAll(async () => {
    svc = await startTestService({ env: { RATE_LIMIT_WINDOW_SECONDS: "2", RATE_LIMIT_STANDARD: "3" } });
    ({ apiKey, apiSecret } = keysOf(await svc.createMerchant(), "sandbox"));
  });
  afterAll(async () => {
    await svc?.close();
  });

  const client = (options: Partial<ConstructorParameters<typeof Stablegate>[0]> = {}) =>
    new Stablegate({ apiKey, apiSecret, baseUrl: svc.urls.sandbox, ...options });

  /** Uses up the Standard tier's window: the next request is answered 429. */
  async function exhaust() {
    const noRetry = client({ maxRetries: 0 });
    for (let i = 0; i < 10; i++) {
      const err = await noRetry.balance.get().catch((e: unknown) => e);
      if (err instanceof RateLimitError) return err;
    }
    throw new Error("the rate limit never answered 429");
  }

  it("a GET answered 429 waits the Retry-After seconds, then succeeds", async () => {
    const limited = await exhaust();
    expect(limited).toMatchObject({ status: 429, code: "RATE_LIMITED" });
    expect(limited.retryAfter).toBeGreaterThanOrEqual(1);
    const seen: (ResponseInfo & { at: number })[] = [];
    const started = Date.now();
    const lines = await client({ onResponse: (r) => seen.push({ ...r, at: Date.now() }) }).balance.get();
    expect(Array.isArray(lines)).toBe(true);
    expect(seen.map((s) => s.status)).toEqual([429, 200]);
    const retryAfter = Number(seen[0]?.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // The second attempt went out no earlier than the server asked.
    expect((seen[1]?.at ?? 0) - (seen[0]?.at ?? 0)).toBeGreaterThanOrEqual(retryAfter * 1000 - 50);
    expect(Date.now() - started).toBeGreaterThanOrEqual(retryAfter * 1000);
  });

  it("a POST without an Idempotency-Key is retried on 429 too (nothing was processed)", async () => {
    const session = await client().checkoutSessions.create({ amount: 6, currencyType: TRC });
    await exhaust();
    const seen: ResponseInfo[] = [];
    const payment = await client({ onResponse: (r) => seen.push(r) }).sandbox.payCheckoutSession(session.id);
    expect(payment.amount).toBe(6);
    expect(seen.map((s) => [s.status, s.attempt, s.idempotencyKey])).toEqual([
      [429, 0, undefined],
      [202, 1, undefined],
    ]);
    // Paid once: the refused attempt did nothing.
    const paid = await waitFor(async () => {
      const s = await client().checkoutSessions.get(session.id);
      return s.status === "confirmed" ? s : null;
    });
    expect(paid.actualBalance).toBe(6);
  });

  it("a Retry-After beyond maxRetryWaitMs, or no retries left: RateLimitError at once with retryAfter", async () => {
    await exhaust();
    const seen: ResponseInfo[] = [];
    const started = Date.now();
    const err = await client({ maxRetryWaitMs: 100, onResponse: (r) => seen.push(r) })
      .balance.get()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfter).toBeGreaterThanOrEqual(1);
    expect((err as RateLimitError).message).toMatch(/rate limit/i);
    expect(seen).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(900);
  });
});

describe("idempotent retries over a real dropped connection", () => {
  let svc: TestService;
  let proxy: Awaited<ReturnType<typeof startDropProxy>>;
  let m: SdkMerchant;
  const seen: ResponseInfo[] = [];
  beforeAll(async () => {
    svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
    proxy = await startDropProxy(svc.urls.sandbox);
    m = await sdkMerchant(svc, { client: { baseUrl: proxy.url, onResponse: (r) => seen.push(r) } });
    await fund(m.client, 2000, TRC);
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await svc?.close();
  });

  async function available() {
    return (await m.client.balance.get()).find((l) => l.currencyType === TRC)?.available ?? 0;
  }

  it("withdrawal create: the first answer is lost after the server processed it; the retry gets the replay, one withdrawal, one hold", async () => {
    const reference = `sdk-drop-${Date.now()}`;
    const before = await available();
    const requestsBefore = proxy.requests;
    seen.length = 0;
    proxy.dropNextResponses(1);
    const w = await m.client.withdrawals.create({
      amount: 7,
      currencyType: TRC,
      walletAddress: TRON_TO,
      reference,
    });
    expect(proxy.dropped).toBe(1);
    expect(proxy.requests - requestsBefore).toBe(2);
    // Only the retry's answer arrived: the stored one, replayed.
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ status: 201, attempt: 1, replayed: true });
    expect(seen[0]?.headers.get("idempotent-replayed")).toBe("true");
    const found = await m.client.transactions.list({ search: reference });
    expect(found.pagination.total).toBe(1);
    expect(found.data[0]?.id).toBe(w.id);
    await waitFor(async () => (await m.client.withdrawals.get(w.id)).status === "completed", 20_000);
    expect(await available()).toBeCloseTo(before - 7, 6);
  });

  it("checkout session and wallet: one object each, the replay returns the same id", async () => {
    const orderId = `sdk-drop-order-${Date.now()}`;
    seen.length = 0;
    proxy.dropNextResponses(1);
    const session = await m.client.checkoutSessions.create({ amount: 9, currencyType: TRC, orderId });
    expect(seen.map((s) => [s.status, s.replayed])).toEqual([[201, true]]);
    const found = await m.client.transactions.list({ search: orderId });
    expect(found.data.map((t) => t.id)).toEqual([session.id]);

    seen.length = 0;
    proxy.dropNextResponses(1);
    const wallet = await m.client.wallets.generate({ currencyType: TRC, label: "drop" });
    expect(seen.map((s) => [s.status, s.replayed])).toEqual([[201, true]]);
    const again = await m.client.wallets.generate({ currencyType: TRC, label: "drop" });
    expect(again.address).not.toBe(wallet.address); // a new key: a new address
  });

  it("approve (no Idempotency-Key) is not repeated after a lost answer: ConnectionError, and it was applied once", async () => {
    const w = await m.client.withdrawals.create({ amount: 1001, currencyType: TRC, walletAddress: TRON_TO });
    expect(w.status).toBe("pending");
    const requestsBefore = proxy.requests;
    proxy.dropNextResponses(1);
    const err = await m.client.withdrawals.approve(w.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err).not.toBeInstanceOf(TimeoutError);
    expect(proxy.requests - requestsBefore).toBe(1);
    // The server did approve it: a blind retry would have answered INVALID_STATE at best.
    expect((await m.client.withdrawals.get(w.id)).status).not.toBe("pending");
  });

  it("503 CHAIN_UNAVAILABLE (production without a chain): a keyed POST is retried with the same key, then ChainUnavailableError", async () => {
    const attempts: ResponseInfo[] = [];
    const production = new Stablegate({
      apiKey: m.production.apiKey,
      apiSecret: m.production.apiSecret,
      baseUrl: svc.urls.production,
      onResponse: (r) => attempts.push(r),
    });
    const err = await production.checkoutSessions
      .create({ amount: 5, currencyType: TRC })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainUnavailableError);
    expect(err).toBeInstanceOf(ServiceUnavailableError);
    expect(err).toMatchObject({ status: 503, code: "CHAIN_UNAVAILABLE" });
    expect(attempts.map((a) => a.status)).toEqual([503, 503, 503]);
    expect(new Set(attempts.map((a) => a.idempotencyKey)).size).toBe(1);
  });
});

describe("timeouts and 503 without a safe retry (a local server standing in for a stuck gateway)", () => {
  let slow: Receiver;
  beforeAll(async () => {
    slow = await startReceiver({ kind: "sleep", ms: 5_000 });
  });
  afterAll(async () => {
    await slow?.close();
  });

  it("a GET that times out is retried, then TimeoutError; an approve is sent once", async () => {
    const client = new Stablegate({
      apiKey: "ak_test_x",
      baseUrl: slow.url(""),
      timeoutMs: 150,
      maxRetries: 1,
    });
    const get = await client.transactions.get("tx_1").catch((e: unknown) => e);
    expect(get).toBeInstanceOf(TimeoutError);
    expect(get).toMatchObject({ code: "TIMEOUT" });
    await waitFor(() => slow.received.length === 2);
    slow.received.length = 0;
    const approve = await client.withdrawals.approve("tx_1").catch((e: unknown) => e);
    expect(approve).toBeInstanceOf(TimeoutError);
    await new Promise((r) => setTimeout(r, 300));
    expect(slow.received).toHaveLength(1);
  });

  it("503 SERVICE_UNAVAILABLE: a GET is retried after Retry-After; an approve is not (its COMMIT may have happened)", async () => {
    const unavailable = JSON.stringify({
      success: false,
      error: { code: "SERVICE_UNAVAILABLE", message: "Try again.", details: {} },
    });
    let n = 0;
    slow.set(() =>
      n++ === 0
        ? {
            kind: "status",
            status: 503,
            body: unavailable,
            headers: { "retry-after": "1", "content-type": "application/json" },
          }
        : { kind: "status", status: 200, body: JSON.stringify({ success: true, data: [] }) },
    );
    slow.received.length = 0;
    const client = new Stablegate({ apiKey: "ak_test_x", baseUrl: slow.url("") });
    const started = Date.now();
    expect(await client.balance.get()).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(slow.received).toHaveLength(2);
    n = 0;
    slow.received.length = 0;
    const err = await client.withdrawals.approve("tx_1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnavailableError);
    expect(slow.received).toHaveLength(1);
  });
});
