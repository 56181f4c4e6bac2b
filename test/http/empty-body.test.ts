import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateSettings } from "../../src/merchants/index.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver } from "../webhooks/support.js";
import { type Funded, fundedMerchant } from "../withdrawals/support.js";

// A bodiless request is `{}`, whether it says `Content-Type: application/json` (clients that set
// the header on every request) or nothing at all: routes whose fields are all optional answer as
// for `{}`; routes with required fields answer 400 VALIDATION_ERROR naming each missing field.

let svc: TestService;
let receiver: Receiver;
let m: Funded;
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 500 });
  // Every withdrawal waits for approval, so approve and reject have something to act on.
  await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: false }, new Date());
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

/** The two bodiless forms: an empty JSON body, and no body with no Content-Type. */
const FORMS = [
  { name: "Content-Type: application/json, empty body", headers: { "content-type": "application/json" } },
  { name: "no Content-Type, no body", headers: {} },
] as const;

function bodiless(
  path: string,
  headers: Record<string, string>,
  form: (typeof FORMS)[number],
  method = "POST",
) {
  return call(svc.urls.sandbox, path, {
    method,
    headers: { ...headers, ...form.headers },
    ...("content-type" in form.headers ? { body: "" } : {}),
  });
}

async function pendingWithdrawal(): Promise<string> {
  const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers: m.api,
    json: { amount: 5, currencyType: TRC, walletAddress: TRON_TO },
  });
  expect(r.status, r.text).toBe(201);
  expect(r.body.data.status).toBe("pending");
  return r.body.data.id;
}

describe.each(FORMS)("bodiless requests ($name)", (form) => {
  it("approve a withdrawal request", async () => {
    const id = await pendingWithdrawal();
    const r = await bodiless(`/api/v1/public/withdrawal-requests/${id}/approve`, m.api, form);
    expect(r.status, r.text).toBe(200);
    expect(["processing", "completed"]).toContain(r.body.data.status);
  });

  it("reject a withdrawal request (no reason)", async () => {
    const id = await pendingWithdrawal();
    const r = await bodiless(`/api/v1/public/withdrawal-requests/${id}/reject`, m.api, form);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: "rejected", rejectionReason: null });
  });

  it("approve and reject on the dashboard channel", async () => {
    const a = await pendingWithdrawal();
    const approved = await bodiless(`/api/v1/dashboard/withdrawal-requests/${a}/approve`, m.bearer, form);
    expect(approved.status, approved.text).toBe(200);
    const b = await pendingWithdrawal();
    const rejected = await bodiless(`/api/v1/dashboard/withdrawal-requests/${b}/reject`, m.bearer, form);
    expect(rejected.status, rejected.text).toBe(200);
    expect(rejected.body.data.status).toBe("rejected");
  });

  it("webhook test", async () => {
    const r = await bodiless("/api/v1/webhook/test", m.api, form);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.deliveryStatus).toBe("delivered");
  });

  it("webhook secret rotate (API key and dashboard)", async () => {
    const r = await bodiless("/api/v1/webhook/secret/rotate", m.api, form);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.webhookSecret).toMatch(/^whsec_/);
    const d = await bodiless("/api/v1/webhook/secret/rotate", m.bearer, form);
    expect(d.status, d.text).toBe(200);
  });

  it("webhook retry", async () => {
    const test = await bodiless("/api/v1/webhook/test", m.api, form);
    expect(test.status, test.text).toBe(200);
    const r = await bodiless(`/api/v1/webhook/retry/${test.body.data.webhookEventId}`, m.api, form);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.webhookEventId).toBe(test.body.data.webhookEventId);
  });

  it("sandbox checkout pay: the full amount", async () => {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 3.5, currencyType: TRC },
    });
    expect(s.status, s.text).toBe(201);
    const r = await bodiless(`/api/v1/sandbox/checkout/${s.body.data.id}/pay`, m.api, form);
    expect(r.status, r.text).toBe(202);
    expect(r.body.data).toMatchObject({ amount: 3.5, walletAddress: s.body.data.walletAddress });
  });

  it("dashboard writes whose fields are all optional", async () => {
    const created = await bodiless("/api/v1/dashboard/api-keys", m.bearer, form);
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.environment).toBe("sandbox");
    const rotated = await bodiless(
      `/api/v1/dashboard/api-keys/${created.body.data.id}/rotate`,
      m.bearer,
      form,
    );
    expect(rotated.status, rotated.text).toBe(200);
    const settings = await bodiless("/api/v1/dashboard/settings", m.bearer, form, "PATCH");
    expect(settings.status, settings.text).toBe(200);
    expect(settings.body.data.autoWithdraw).toBe(false);
  });

  it.each([
    // `amount` or `priceAmount` + `priceCurrency` (issue #41) is a rule across fields, checked once the
    // body has its shape: an empty body names the one field required alone (the next test, the rest).
    ["/checkout/session", ["currencyType"]],
    ["/wallet/generate", ["currencyType"]],
    ["/api/v1/public/withdrawal-requests", ["amount", "currencyType", "walletAddress"]],
    ["/api/v1/webhook/url", ["webhookUrl"]],
    [`/api/v1/sandbox/wallet/${TRON_TO}/pay`, ["amount", "currencyType"]],
    ["/api/v1/auth/login", ["email", "password"]],
  ])("%s with required fields: 400 naming each missing field", async (path, required) => {
    const r = await bodiless(path, m.api, form);
    expect(r.status, r.text).toBe(400);
    expect(r.body.success).toBe(false);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    expect(r.body.error.details.fields).toEqual(required.map((field) => ({ field, message: "is required" })));
  });
});

describe("a checkout session without any price", () => {
  it("names amount (or priceAmount with priceCurrency) once the body has its shape", async () => {
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { currencyType: "USDT-TRC20" },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.details.fields).toEqual([
      { field: "amount", message: "is required (or priceAmount with priceCurrency)" },
    ]);
  });
});

describe("what stays an error", () => {
  it("whitespace only is empty too; malformed JSON and a JSON null are 400", async () => {
    const s = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      method: "POST",
      headers: { ...m.api, "content-type": "application/json" },
      body: " \n\t",
    });
    expect(s.status, s.text).toBe(200);
    const bad = await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", {
      method: "POST",
      headers: { ...m.api, "content-type": "application/json" },
      body: "{",
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields).toEqual([{ field: "body", message: "must be valid JSON" }]);
    const nul = await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", {
      method: "POST",
      headers: { ...m.api, "content-type": "application/json" },
      body: "null",
    });
    expect(nul.status, nul.text).toBe(400);
    expect(nul.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("a body without Content-Type is still refused", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      method: "POST",
      headers: { ...m.api, "content-type": "" },
      body: '{"a":1}',
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("an unknown field in an all-optional body is still refused", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/sandbox/checkout/tx_nope/pay", {
      headers: m.api,
      json: { amont: 1 },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.details.fields).toEqual([{ field: "amont", message: "is not a known field" }]);
  });
});

// The same issue's other ergonomics fix, tested here with the same merchant: one name per field.
describe("consistent field names (the first names kept, deprecated, with the same values)", () => {
  it("sandbox pay answers blockchainTxHash and walletAddress", async () => {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 1, currencyType: TRC },
    });
    const r = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: m.api,
      json: { amount: "0.5" },
    });
    expect(r.status, r.text).toBe(202);
    expect(r.body.data.blockchainTxHash).toMatch(/^[0-9a-f]{64}$/);
    expect(r.body.data).toMatchObject({
      walletAddress: s.body.data.walletAddress,
      address: s.body.data.walletAddress,
      txHash: r.body.data.blockchainTxHash,
      amount: 0.5,
      currencyType: TRC,
    });
    const w = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: m.api,
      json: { currencyType: TRC, label: "names" },
    });
    expect(w.status, w.text).toBe(201);
    expect(w.body.data.walletAddress).toMatch(/^T/);
    expect(w.body.data.address).toBe(w.body.data.walletAddress);
    const wp = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${w.body.data.walletAddress}/pay`, {
      headers: m.api,
      json: { amount: 2, currencyType: TRC },
    });
    expect(wp.status, wp.text).toBe(202);
    expect(wp.body.data).toMatchObject({
      walletAddress: w.body.data.walletAddress,
      address: w.body.data.walletAddress,
      txHash: wp.body.data.blockchainTxHash,
    });
  });
});
