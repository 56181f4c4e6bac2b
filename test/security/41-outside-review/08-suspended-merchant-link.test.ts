import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payerPost } from "../../links/support.js";
import { call, startTestService, type TestService } from "../../support/harness.js";
import { registerOwner } from "../../team/support.js";

// Outside review of issue #41: payment links are the first path that opens a checkout session with
// NO merchant credential, so none of the checks the credential paths make (a suspended account is
// 403 on both channels: test/http/api-key-auth.test.ts, test/dashboard/suspended.test.ts) runs.
// FINDING: an operator suspends a merchant (fraud, a complaint, an unpaid bill); the merchant's API
// keys and dashboard stop working, but its shared links keep opening fresh sessions and taking new
// payers' money. Safe behaviour asserted: a suspended merchant's link opens no session.
let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;

const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  owner = await registerOwner(svc);
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

const setStatus = (status: "active" | "suspended") =>
  svc.database.db.updateTable("merchants").set({ status }).where("id", "=", owner.merchantId).execute();

describe("a suspended merchant's payment link", () => {
  it("opens no new checkout session while the merchant is suspended", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
      headers: owner.sandboxApi,
      json: { title: "Pre-order", amount: 50, currencyTypes: [TRC] },
    });
    expect(r.status, r.text).toBe(201);
    const id = r.body.data.id as string;

    await setStatus("suspended");
    try {
      // The merchant's own credentials are refused…
      const api = await call(svc.urls.sandbox, `/api/v1/public/payment-links/${id}`, {
        headers: owner.sandboxApi,
      });
      expect(api.status, api.text).toBe(403);
      const direct = await call(svc.urls.sandbox, "/checkout/session", {
        headers: owner.sandboxApi,
        json: { amount: 50, currencyType: TRC },
      });
      expect(direct.status, direct.text).toBe(403);
      // …so the anonymous link must not open what the merchant itself may not.
      const post = await payerPost(svc.urls.sandbox, id, { currencyType: TRC });
      const rows = await svc.database.db
        .selectFrom("transactions")
        .select("id")
        .where("payment_link_id", "=", id)
        .execute();
      expect(rows, `POST /l/${id} answered ${post.status} ${post.location ?? ""}`).toHaveLength(0);
      expect(post.status).not.toBe(303);
    } finally {
      await setStatus("active");
    }
  });
});
