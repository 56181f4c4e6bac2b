import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/harness.js";
import { Browser } from "./support.js";

// A suspended merchant's dashboard sessions are refused on their next request, and work again once
// it is active: the session lookup reads the merchant's status with the session, in one statement
// (auth/sessions.ts, through merchants' `merchantStatuses`; issue #36 moved that join). The API-key
// channel's twin is test/http/api-key-auth.test.ts "refuses a suspended merchant".
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
});
afterAll(() => svc?.close());

const setStatus = (merchantId: string, status: "active" | "suspended") =>
  svc.database.db.updateTable("merchants").set({ status }).where("id", "=", merchantId).execute();

describe("a suspended merchant's dashboard session", () => {
  it("is refused with 403 while suspended, in both environments, and works again once reactivated", async () => {
    const b = new Browser(svc.urls.production);
    const r = await b.req("/api/v1/auth/register", {
      json: {
        email: `suspended-${Date.now()}@example.com`,
        password: "correct horse battery",
        companyName: "S Co",
      },
    });
    expect(r.status, r.text).toBe(201);
    const merchantId = r.body.data.user.merchantId as string;
    const sandbox = { "x-environment": "sandbox" };
    expect((await b.req("/api/v1/dashboard/balance")).status).toBe(200);

    await setStatus(merchantId, "suspended");
    for (const headers of [{}, sandbox]) {
      const refused = await b.req("/api/v1/dashboard/balance", { headers });
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body.error.code).toBe("FORBIDDEN");
      expect(refused.body.error.message).toMatch(/suspended/);
    }

    await setStatus(merchantId, "active");
    expect((await b.req("/api/v1/dashboard/balance", { headers: sandbox })).status).toBe(200);
  });
});
