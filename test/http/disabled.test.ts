import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

let svc: TestService;
let headers: Record<string, string>;
beforeAll(async () => {
  svc = await startTestService();
  const k = keysOf(await svc.createMerchant(), "production");
  headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
});
afterAll(() => svc?.close());

// docs/merchants/errors.md#retired-endpoints: every retired endpoint answers 404 NOT_FOUND, with or without credentials.
const CASES: [string, string][] = [
  ["POST", "/api/v1/public/payout/create"],
  ["GET", "/api/v1/refund"],
  ["POST", "/api/v1/refund"],
  ["POST", "/api/v1/refund/tx_123"],
  ["GET", "/api/v1/refund/list"],
  ["DELETE", "/api/v1/refund/tx_123/cancel"],
  ["POST", "/api/v1/token/mint"],
  ["POST", "/api/v1/token/burn"],
  ["POST", "/api/v1/tokens/mint"],
  ["GET", "/api/v1/tokens/burn"],
  ["POST", "/api/v1/wallet/transfer"],
  ["POST", "/api/v1/wallet/transfers"],
  ["GET", "/api/v1/wallet/transfer/history"],
  ["POST", "/api/v1/notifications/test"],
  ["GET", "/api/v1/debug/vars"],
  ["POST", "/api/v1/debug/sql"],
];

describe("disabled endpoints", () => {
  it.each(CASES)("%s %s → 404 on both environments, authenticated or not", async (method, path) => {
    for (const base of [svc.urls.production, svc.urls.sandbox]) {
      for (const h of [{}, headers]) {
        const r = await call(base, path, {
          method,
          headers: h,
          ...(method === "GET" ? {} : { json: { amount: 1 } }),
        });
        expect(r.status).toBe(404);
        expect(r.body).toMatchObject({ success: false, error: { code: "NOT_FOUND" } });
      }
    }
  });

  it("answers 404 before parsing a body (wrong content type still 404)", async () => {
    const r = await call(svc.urls.production, "/api/v1/public/payout/create", {
      body: "not json",
      headers: { "content-type": "text/plain" },
    });
    expect(r.status).toBe(404);
  });
});
