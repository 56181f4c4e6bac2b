import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

// Bad input gets a clear 4xx in the contract's envelope, never a 500 or a half-created session.
let svc: TestService;
let sandbox: Record<string, string>;
let production: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false", CHECKOUT_MIN_EXPIRY_SECONDS: "120" } });
  const m = await svc.createMerchant();
  const s = keysOf(m, "sandbox");
  const p = keysOf(m, "production");
  sandbox = { apikey: s.apiKey, "x-api-secret": s.apiSecret };
  production = { apikey: p.apiKey, "x-api-secret": p.apiSecret };
});
afterAll(async () => {
  await svc?.close();
});

const create = (json: unknown, headers = sandbox, base?: string) =>
  call(base ?? svc.urls.sandbox, "/checkout/session", { headers, json });

function expectField(r: { status: number; body: any; text: string }, field: string) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.success).toBe(false);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
}

describe("POST /checkout/session rejects bad input with 400 VALIDATION_ERROR", () => {
  it.each([
    ["zero", 0],
    ["negative", -5],
    ["too many decimals", 1.1234567],
    ["above the maximum", 1_000_000_001],
    ["text", "ten"],
    ["exponent out of range", "1e12"],
    ["boolean", true],
  ])("amount: %s", async (_name, amount) => {
    expectField(await create({ amount, currencyType: "USDT-TRC20" }), "amount");
  });

  it("currencyType outside the list", async () => {
    const r = await create({ amount: 1, currencyType: "BTC" });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("missing amount, unknown fields", async () => {
    expect((await create({ currencyType: "USDT-TRC20" })).status).toBe(400);
    expect((await create({ amount: 1, currencyType: "USDT-TRC20", colour: "red" })).status).toBe(400);
  });

  it.each([
    ["private address", "https://10.0.0.1/hook"],
    ["loopback", "http://127.0.0.1/hook"],
    ["metadata service", "http://169.254.169.254/latest"],
    ["not a URL", "hook"],
    ["credentials", "https://user:pw@example.com/hook"],
  ])("callbackUrl: %s", async (_name, callbackUrl) => {
    expectField(await create({ amount: 1, currencyType: "USDT-TRC20", callbackUrl }), "callbackUrl");
  });

  it.each([
    ["below CHECKOUT_MIN_EXPIRY_SECONDS", 1],
    ["above 1440 minutes", 1441],
    ["zero", 0],
    ["negative", -3],
  ])("expiresInMinutes: %s", async (_name, expiresInMinutes) => {
    expectField(
      await create({ amount: 1, currencyType: "USDT-TRC20", expiresInMinutes }),
      "expiresInMinutes",
    );
  });

  it("accepts fractional minutes within the bounds", async () => {
    const r = await create({ amount: 1, currencyType: "USDT-TRC20", expiresInMinutes: 2.5 });
    expect(r.status, r.text).toBe(201);
    expect(Date.parse(r.body.data.expiresAt) - Date.parse(r.body.data.createdAt)).toBe(150_000);
  });

  it("metadata over 4 KB or not an object", async () => {
    expectField(
      await create({ amount: 1, currencyType: "USDT-TRC20", metadata: { blob: "x".repeat(5000) } }),
      "metadata",
    );
    expect((await create({ amount: 1, currencyType: "USDT-TRC20", metadata: [1, 2] })).status).toBe(400);
  });

  it("malformed JSON", async () => {
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      headers: { ...sandbox, "content-type": "application/json" },
      body: '{"amount": 1,',
    });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("nothing was created by the rejected requests", async () => {
    const list = await call(svc.urls.sandbox, "/api/v1/public/transactions?type=deposit&limit=100", {
      headers: sandbox,
    });
    expect(list.body.data).toHaveLength(1); // only the fractional-minutes session
  });
});

describe("who can see and do what", () => {
  it("401 without credentials", async () => {
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      json: { amount: 1, currencyType: "USDT-TRC20" },
    });
    expect(r.status).toBe(401);
  });

  it("another merchant's session, or the other environment's, is 404", async () => {
    const mine = await create({ amount: 1, currencyType: "USDT-TRC20" });
    const other = keysOf(await svc.createMerchant(), "sandbox");
    const theirs = await call(svc.urls.sandbox, `/checkout/session/${mine.body.data.id}`, {
      headers: { apikey: other.apiKey, "x-api-secret": other.apiSecret },
    });
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBe("NOT_FOUND");
    const prod = await call(svc.urls.production, `/checkout/session/${mine.body.data.id}`, {
      headers: production,
    });
    expect(prod.status).toBe(404);
    expect((await call(svc.urls.sandbox, "/checkout/session/tx_nope", { headers: sandbox })).status).toBe(
      404,
    );
  });

  it("production without a configured chain: 503 CHAIN_UNAVAILABLE, nothing created", async () => {
    const r = await create({ amount: 1, currencyType: "USDT-ERC20" }, production, svc.urls.production);
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe("CHAIN_UNAVAILABLE");
    const w = await call(svc.urls.production, "/wallet/generate", {
      headers: production,
      json: { currencyType: "USDT-TRC20" },
    });
    expect(w.status).toBe(503);
  });

  it("sandbox pay endpoints are 404 in production, before credentials are checked", async () => {
    for (const headers of [{}, production]) {
      const a = await call(svc.urls.production, "/api/v1/sandbox/checkout/tx_x/pay", { headers, json: {} });
      expect(a.status).toBe(404);
      expect(a.body.error.code).toBe("NOT_FOUND");
      const b = await call(svc.urls.production, "/api/v1/sandbox/wallet/T1/pay", {
        headers,
        json: { amount: 1, currencyType: "USDT-TRC20" },
      });
      expect(b.status).toBe(404);
    }
  });

  it("sandbox pay: unknown session 404, bad amount 400", async () => {
    expect(
      (await call(svc.urls.sandbox, "/api/v1/sandbox/checkout/tx_nope/pay", { headers: sandbox, json: {} }))
        .status,
    ).toBe(404);
    const s = await create({ amount: 1, currencyType: "USDT-TRC20" });
    const bad = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: sandbox,
      json: { amount: -1 },
    });
    expectField(bad, "amount");
    // No body at all (as in the README's curl): the full amount.
    const bare = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      method: "POST",
      headers: sandbox,
    });
    expect(bare.status, bare.text).toBe(202);
    expect(bare.body.data.amount).toBe(1);
  });

  it("/wallet/generate: bad currency, over-long label", async () => {
    const a = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: sandbox,
      json: { currencyType: "DOGE" },
    });
    expect(a.status).toBe(400);
    const b = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: sandbox,
      json: { currencyType: "USDT-TRC20", label: "x".repeat(300) },
    });
    expect(b.status).toBe(400);
  });
});
