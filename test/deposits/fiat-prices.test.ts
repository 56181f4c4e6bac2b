import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { coinbaseRates, type FakeTicker, krakenTicker, startFakeTicker } from "../rates/fake-ticker.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { hooksFor, type SandboxMerchant, sandboxMerchant } from "./support.js";

// Prices in fiat (issue #41, docs/decisions/prices.md) through the real service: a session priced in
// EUR locks the source's rate and asks for the token amount rounded up; GET, the deposit webhook and
// the CSV export carry the price; no fresh rate is 503 RATE_UNAVAILABLE; bad input is 400; and the
// shop's return addresses (successUrl / cancelUrl) are checked and stored.

const TRC = "USDT-TRC20";
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;
let production: Record<string, string>;
let fake: FakeTicker;

beforeAll(async () => {
  [svc, receiver, fake] = await Promise.all([
    startTestService({
      env: {
        SSRF_ALLOW_CIDRS: "127.0.0.0/8",
        RATE_LIMIT_ENABLED: "false",
        FIXED_RATES: "EUR=1.08,GBP=1.27",
      },
    }),
    startReceiver(),
    startFakeTicker(),
  ]);
  m = await sandboxMerchant(svc, receiver);
  const p = keysOf(await svc.createMerchant(), "production");
  production = { apikey: p.apiKey, "x-api-secret": p.apiSecret };
}, 60_000);
afterAll(async () => {
  await Promise.all([receiver?.close(), fake?.close(), svc?.close()]);
});

const create = (
  json: Record<string, unknown>,
  base = svc.urls.sandbox,
  headers: Record<string, string> = m.headers,
) => call(base, "/checkout/session", { headers, json: { currencyType: TRC, ...json } });

function expectField(r: { status: number; body: any; text: string }, field: string) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
}

describe("a session priced in EUR at the fixed rate (FIXED_RATES=EUR=1.08)", () => {
  let id: string;

  it("asks for 10.80 USDT for 10.00 EUR and carries the locked rate", async () => {
    const r = await create({ priceAmount: "10.00", priceCurrency: "EUR", orderId: "fiat-1" });
    expect(r.status, r.text).toBe(201);
    const s = r.body.data;
    expect(s).toMatchObject({
      amount: 10.8,
      priceAmount: 10,
      priceCurrency: "EUR",
      exchangeRate: "1.08",
      rateSource: "fixed",
      successUrl: null,
      cancelUrl: null,
    });
    expect(Date.parse(s.rateAt)).toBeGreaterThan(Date.now() - 60_000);
    id = s.id;
    const got = await call(svc.urls.sandbox, `/checkout/session/${id}`, { headers: m.headers });
    expect(got.status, got.text).toBe(200);
    expect(got.body.data).toMatchObject({
      amount: 10.8,
      priceAmount: 10,
      exchangeRate: "1.08",
      rateAt: s.rateAt,
    });
  });

  it("rounds up to 6 decimals (a number price too) and keeps USD 1:1", async () => {
    const gbp = await create({ priceAmount: 0.333333, priceCurrency: "GBP" });
    expect(gbp.status, gbp.text).toBe(201);
    // 0.333333 × 1.27 = 0.42333291 → 0.423333
    expect(gbp.body.data.amount).toBe(0.423333);
    const usd = await create({ priceAmount: "19.99", priceCurrency: "USD" });
    expect(usd.body.data).toMatchObject({ amount: 19.99, exchangeRate: "1", rateSource: "fixed" });
  });

  it("a token-priced session has null price fields", async () => {
    const r = await create({ amount: 5 });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({
      amount: 5,
      priceAmount: null,
      priceCurrency: null,
      exchangeRate: null,
      rateSource: null,
      rateAt: null,
    });
  });

  it("its deposit webhook carries the price fields", async () => {
    const paid = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${id}/pay`, {
      headers: m.headers,
      json: {},
    });
    expect(paid.status, paid.text).toBe(202);
    const hook = await waitFor(
      () => hooksFor(receiver, id).find((h) => h.body.data.status === "confirmed"),
      20_000,
    );
    expect(hook.body.data).toMatchObject({
      type: "deposit",
      amount: 10.8,
      actualBalance: 10.8,
      priceAmount: 10,
      priceCurrency: "EUR",
      exchangeRate: "1.08",
      rateSource: "fixed",
    });
    expect(typeof hook.body.data.rateAt).toBe("string");
  });

  it("the CSV export carries the price columns (empty for a token-priced deposit)", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv", { headers: m.headers });
    expect(r.status, r.text).toBe(200);
    const [header, ...lines] = r.text.trim().split("\r\n");
    const cols = (header as string).split(",");
    expect(cols.slice(-5)).toEqual(["priceAmount", "priceCurrency", "exchangeRate", "rateSource", "rateAt"]);
    const rows = lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [cols[i], v])));
    const priced = rows.find((x) => x.transactionId === id);
    expect(priced).toMatchObject({
      amount: "10.8",
      priceAmount: "10",
      priceCurrency: "EUR",
      exchangeRate: "1.08",
      rateSource: "fixed",
    });
    expect(Date.parse(priced?.rateAt as string)).not.toBeNaN();
    const plain = rows.find((x) => x.amount === "5");
    expect(plain).toMatchObject({
      priceAmount: "",
      priceCurrency: "",
      exchangeRate: "",
      rateSource: "",
      rateAt: "",
    });
  });
});

describe("bad prices are 400 VALIDATION_ERROR", () => {
  it("both amount and priceAmount", async () => {
    expectField(await create({ amount: 10, priceAmount: 10, priceCurrency: "EUR" }), "priceAmount");
  });
  it("neither amount nor priceAmount", async () => {
    expectField(await create({}), "amount");
  });
  it.each([
    ["lower case", "eur"],
    ["not ISO 4217", "XYZ"],
    ["four letters", "EURO"],
    ["not quoted by the source", "JPY"],
    ["empty", ""],
  ])("priceCurrency: %s", async (_name, priceCurrency) => {
    expectField(await create({ priceAmount: 10, priceCurrency }), "priceCurrency");
  });
  it("priceAmount without priceCurrency, priceCurrency without priceAmount", async () => {
    expectField(await create({ priceAmount: 10 }), "priceCurrency");
    expectField(await create({ amount: 10, priceCurrency: "EUR" }), "priceCurrency");
  });
  it.each([
    ["zero", 0],
    ["negative", "-5"],
    ["too many decimals", "1.1234567"],
    ["text", "ten"],
  ])("priceAmount: %s", async (_name, priceAmount) => {
    expectField(await create({ priceAmount, priceCurrency: "EUR" }), "priceAmount");
  });
  it("a price worth more than 1000000000 in the token", async () => {
    expectField(await create({ priceAmount: "999999999", priceCurrency: "EUR" }), "priceAmount");
  });
});

describe("successUrl and cancelUrl", () => {
  it("are stored and returned (http in the sandbox)", async () => {
    const r = await create({
      amount: 1,
      successUrl: "https://shop.example/thanks?order=1",
      cancelUrl: "http://shop.example/cart",
    });
    expect(r.status, r.text).toBe(201);
    const got = await call(svc.urls.sandbox, `/checkout/session/${r.body.data.id}`, { headers: m.headers });
    expect(got.body.data).toMatchObject({
      successUrl: "https://shop.example/thanks?order=1",
      cancelUrl: "http://shop.example/cart",
    });
  });

  it.each([
    ["javascript:", "javascript:alert(document.cookie)"],
    ["ftp:", "ftp://shop.example/thanks"],
    ["data:", "data:text/html,<script>alert(1)</script>"],
    ["credentials", "https://user:pw@shop.example/"],
    ["relative", "/thanks"],
    ["a space", "https://shop.example/a b"],
    ["over 2048 characters", `https://shop.example/${"a".repeat(2048)}`],
  ])("%s is refused", async (_name, url) => {
    expectField(await create({ amount: 1, successUrl: url }), "successUrl");
    expectField(await create({ amount: 1, cancelUrl: url }), "cancelUrl");
  });

  it("plain http is refused in production", async () => {
    const r = await create(
      { amount: 1, successUrl: "http://shop.example/thanks" },
      svc.urls.production,
      production,
    );
    expectField(r, "successUrl");
  });
});

describe("public tickers (a local fake answering the provider's shape)", () => {
  async function tickerService(source: string, maxAge = "300") {
    return startTestService({
      env: {
        RATE_LIMIT_ENABLED: "false",
        EXCHANGE_RATE_SOURCE: source,
        EXCHANGE_RATE_URL: fake.url,
        EXCHANGE_RATE_MAX_AGE_SECONDS: maxAge,
        EXCHANGE_RATE_TIMEOUT_MS: "500",
      },
    });
  }

  async function headersOf(s: TestService) {
    const k = keysOf(await s.createMerchant(), "sandbox");
    return { apikey: k.apiKey, "x-api-secret": k.apiSecret };
  }

  it("coinbase: 10.00 EUR at 0.92 EUR per USDT", async () => {
    const s = await tickerService("coinbase");
    try {
      fake.answer({ kind: "json", body: coinbaseRates("USDT", { EUR: "0.92", USD: "1" }) });
      const r = await create(
        { priceAmount: "10.00", priceCurrency: "EUR" },
        s.urls.sandbox,
        await headersOf(s),
      );
      expect(r.status, r.text).toBe(201);
      // 1 / 0.92 = 1.086956521739130435 (18 decimals); × 10 = 10.86956521739… → 10.869566
      expect(r.body.data).toMatchObject({
        amount: 10.869566,
        exchangeRate: "1.086956521739130435",
        rateSource: "coinbase",
      });
    } finally {
      await s.close();
    }
  });

  it("kraken: a stale quote is 503 RATE_UNAVAILABLE with Retry-After, then a fresh one serves", async () => {
    const s = await tickerService("kraken", "1");
    try {
      const headers = await headersOf(s);
      fake.answer({ kind: "json", body: krakenTicker("USDTEUR", "0.8") });
      const keyed = { ...headers, "idempotency-key": "fiat-order-8" };
      const first = await create({ priceAmount: "8", priceCurrency: "EUR" }, s.urls.sandbox, keyed);
      expect(first.status, first.text).toBe(201);
      expect(first.body.data).toMatchObject({ amount: 10, exchangeRate: "1.25", rateSource: "kraken" });
      // The provider fails; once the quote is older than EXCHANGE_RATE_MAX_AGE_SECONDS there is no rate.
      fake.answer({ kind: "raw", status: 502, text: "bad gateway" });
      await new Promise((r) => setTimeout(r, 1_100));
      const stale = await create({ priceAmount: "8", priceCurrency: "EUR" }, s.urls.sandbox, headers);
      expect(stale.status, stale.text).toBe(503);
      expect(stale.body.error.code).toBe("RATE_UNAVAILABLE");
      // A replay of the first request's Idempotency-Key answers the rate locked then, without a source.
      const replay = await create({ priceAmount: "8", priceCurrency: "EUR" }, s.urls.sandbox, keyed);
      expect(replay.status, replay.text).toBe(201);
      expect(replay.body.data).toMatchObject({
        id: first.body.data.id,
        exchangeRate: "1.25",
        rateAt: first.body.data.rateAt,
      });
      expect(Number(stale.headers.get("retry-after"))).toBeGreaterThan(0);
      // A token-priced session does not need a rate.
      expect((await create({ amount: 1 }, s.urls.sandbox, headers)).status).toBe(201);
      // (Within 10 % of the last good quote: a larger jump is not taken, docs/decisions/prices.md.)
      fake.answer({ kind: "json", body: krakenTicker("USDTEUR", "0.78125") });
      const fresh = await create({ priceAmount: "8", priceCurrency: "EUR" }, s.urls.sandbox, headers);
      expect(fresh.status, fresh.text).toBe(201);
      expect(fresh.body.data).toMatchObject({ amount: 10.24, exchangeRate: "1.28" });
    } finally {
      await s.close();
    }
  });
});
