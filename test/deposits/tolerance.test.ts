import { afterAll, beforeAll, expect, it } from "vitest";
import { Browser } from "../dashboard/support.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { waitFor } from "../webhooks/support.js";

// README.md#money-when-a-payment-counts-and-books-that-match: the merchant setting `underpaymentTolerancePercent` (0–10, default 0, per
// environment), set in the dashboard's settings; a session whose payment reaches
// amount × (1 − tolerance) by its deadline is confirmed (the sandbox simulator end to end here; the
// chain cases are in on-time-suite.ts).

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.close();
});

const sandbox = { "x-environment": "sandbox" };

it("underpaymentTolerancePercent: default 0, per environment, 0–10 with at most 2 decimals, and it confirms a short payment", async () => {
  const b = new Browser(svc.urls.production);
  const reg = await b.req("/api/v1/auth/register", {
    json: {
      email: `tolerance-${Date.now()}@example.com`,
      password: "correct horse battery",
      companyName: "T",
    },
  });
  expect(reg.status, reg.text).toBe(201);
  const keys = (reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[]).find(
    (k) => k.environment === "sandbox",
  )!;

  const get = async (env: Record<string, string>) =>
    (await b.req("/api/v1/dashboard/settings", { headers: env })).body.data.underpaymentTolerancePercent;
  expect(await get(sandbox)).toBe(0);

  for (const bad of [10.01, -1, 1.234, "1", null]) {
    const r = await b.req("/api/v1/dashboard/settings", {
      method: "PATCH",
      headers: sandbox,
      json: { underpaymentTolerancePercent: bad },
    });
    expect(r.status, `${bad}: ${r.text}`).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    expect(JSON.stringify(r.body.error.details)).toContain("underpaymentTolerancePercent");
  }
  const set = await b.req("/api/v1/dashboard/settings", {
    method: "PATCH",
    headers: sandbox,
    json: { underpaymentTolerancePercent: 1.5 },
  });
  expect(set.status, set.text).toBe(200);
  expect(set.body.data.underpaymentTolerancePercent).toBe(1.5);
  expect(await get(sandbox)).toBe(1.5);
  expect(await get({ "x-environment": "production" })).toBe(0);

  // 98.6 % of 10 USDT with 1.5 % tolerance: confirmed, the whole 9.86 credited.
  const headers = { apikey: keys.apiKey, "x-api-secret": keys.apiSecret };
  const created = await call(svc.urls.sandbox, "/checkout/session", {
    headers,
    json: { amount: 10, currencyType: "USDT-TRC20" },
  });
  expect(created.status, created.text).toBe(201);
  expect(created.body.data).toMatchObject({
    detectedAt: null,
    detectedAmount: 0,
    confirmations: { current: 0 },
  });
  const id = created.body.data.id as string;
  const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${id}/pay`, {
    headers,
    json: { amount: 9.86 },
  });
  expect(pay.status, pay.text).toBe(202);
  const done = await waitFor(async () => {
    const r = await call(svc.urls.sandbox, `/checkout/session/${id}`, { headers });
    return r.body.data.status === "confirmed" ? r.body.data : null;
  });
  expect(done).toMatchObject({
    status: "confirmed",
    actualBalance: 9.86,
    detectedAmount: 9.86,
    confirmations: { current: 1, required: 1 },
  });
  expect(typeof done.detectedAt).toBe("string");
});
