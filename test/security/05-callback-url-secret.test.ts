import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

// Security issue #18, finding 5: a checkout session that sets `callbackUrl` aims a delivery signed
// with the merchant's webhook secret at a URL of the caller's choice. Holding only the `apikey`
// (the less protected half of the pair) must not be enough: the secret is required there
// (docs/merchants/authentication.md#where-the-secret-is-required), and an Idempotency-Key replay must not get around it.

let svc: TestService;
let merchant: CreatedMerchant;
let apikey: string;
let secret: string;

// A public IPv4 literal: valid for callbackUrl without DNS, and never dialled here (nothing is paid).
const CALLBACK = "https://93.184.216.34/stolen-hook";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  merchant = await svc.createMerchant();
  const k = keysOf(merchant, "sandbox");
  apikey = k.apiKey;
  secret = k.apiSecret;
});
afterAll(async () => {
  await svc?.close();
});

const create = (json: Record<string, unknown>, headers: Record<string, string>) =>
  call(svc.urls.sandbox, "/checkout/session", { headers, json: { currencyType: "USDT-TRC20", ...json } });

/** Sessions of this merchant with the given callback URL, straight from the database. */
async function sessionsWithCallback(url: string): Promise<number> {
  const rows = await svc.database.db
    .selectFrom("checkout_sessions")
    .select("id")
    .where("merchant_id", "=", merchant.id)
    .where("callback_url", "=", url)
    .execute();
  return rows.length;
}

function expectInvalidAuth(r: { status: number; body: any; text: string }) {
  expect(r.status, r.text).toBe(401);
  expect(r.body).toEqual({
    success: false,
    error: {
      code: "INVALID_AUTH",
      message: expect.stringMatching(/x-api-secret/),
      details: {},
      requestId: expect.any(String),
    },
  });
}

describe("finding 5: callbackUrl needs x-api-secret on the API-key channel", () => {
  it("apikey alone with callbackUrl: 401 INVALID_AUTH, nothing created", async () => {
    const url = `${CALLBACK}?case=alone`;
    const r = await create({ amount: 1, orderId: "victim-order-1", callbackUrl: url }, { apikey });
    expectInvalidAuth(r);
    expect(await sessionsWithCallback(url)).toBe(0);
  });

  it("an upper-case APIKEY header alone is refused the same way; a wrong secret stays 401", async () => {
    const url = `${CALLBACK}?case=wrong`;
    expectInvalidAuth(await create({ amount: 1, callbackUrl: url }, { APIKEY: apikey }));
    const wrong = await create({ amount: 1, callbackUrl: url }, { apikey, "x-api-secret": "sk_test_wrong" });
    expect(wrong.status, wrong.text).toBe(401);
    expect(wrong.body.error.code).toBe("INVALID_AUTH");
    expect(await sessionsWithCallback(url)).toBe(0);
  });

  it("an auth failure comes before the URL is looked at (no DNS probing with the apikey alone)", async () => {
    // A URL that would be a 400 for a caller holding the secret is a 401 without it.
    expectInvalidAuth(await create({ amount: 1, callbackUrl: "https://10.0.0.1/x" }, { apikey }));
  });

  it("without callbackUrl the secret stays optional", async () => {
    const r = await create({ amount: 1, orderId: "plain" }, { apikey });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.callbackUrl).toBeNull();
  });

  it("with the secret, callbackUrl is accepted", async () => {
    const url = `${CALLBACK}?case=ok`;
    const r = await create({ amount: 1, callbackUrl: url }, { apikey, "x-api-secret": secret });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.callbackUrl).toBe(url);
    expect(await sessionsWithCallback(url)).toBe(1);
  });

  it("an Idempotency-Key replay without the secret is refused, with it the stored answer replays", async () => {
    const url = `${CALLBACK}?case=replay`;
    const body = { amount: 2, orderId: "replayed", callbackUrl: url };
    const key = `replay-${Date.now()}`;
    const first = await create(body, { apikey, "x-api-secret": secret, "idempotency-key": key });
    expect(first.status, first.text).toBe(201);

    const replayWithout = await create(body, { apikey, "idempotency-key": key });
    expectInvalidAuth(replayWithout);
    expect(replayWithout.headers.get("idempotent-replayed")).toBeNull();

    const replayWith = await create(body, { apikey, "x-api-secret": secret, "idempotency-key": key });
    expect(replayWith.status, replayWith.text).toBe(201);
    expect(replayWith.headers.get("idempotent-replayed")).toBe("true");
    expect(replayWith.text).toBe(first.text);
    expect(await sessionsWithCallback(url)).toBe(1);
  });

  it("the dashboard channel (its 'create a test session') sets callbackUrl without an API secret", async () => {
    const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
      json: {
        email: `cb-${Date.now()}@example.com`,
        password: "a long passphrase 123",
        companyName: "Cb Ltd",
      },
      headers: { "x-token-delivery": "bearer" },
    });
    expect(reg.status, reg.text).toBe(201);
    const url = `${CALLBACK}?case=dashboard`;
    const r = await create(
      { amount: 1, callbackUrl: url },
      { authorization: `Bearer ${reg.body.data.accessToken}` },
    );
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.callbackUrl).toBe(url);
  });

  it("a key first used without callbackUrl cannot be replayed into one without the secret", async () => {
    const key = `fresh-${Date.now()}`;
    const url = `${CALLBACK}?case=fresh`;
    // Different body under the same key is a mismatch for a caller with the secret; without it, 401 first.
    const plain = await create({ amount: 3 }, { apikey, "idempotency-key": key });
    expect(plain.status, plain.text).toBe(201);
    expectInvalidAuth(await create({ amount: 3, callbackUrl: url }, { apikey, "idempotency-key": key }));
    expect(await sessionsWithCallback(url)).toBe(0);
  });
});
