import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { callOperation, dataOf } from "../support/operation.js";
import { waitFor } from "../webhooks/support.js";
import { createLink, payerPost, sessionOf } from "./support.js";

// "A link paid 50 times concurrently with maxPayments: 20 → exactly 20 sessions paid": 50 payers
// open a session at once and pay it at once (sandbox). Opening locks the link's row and counts the
// sessions holding a slot (open or paid), so exactly 20 open; the other 30 are refused with the
// page's message (409) and nothing is created for them. On PGlite by default; on PostgreSQL with
// TEST_DATABASE_URL (real concurrency: several connections).
let svc: TestService;
let headers: Record<string, string>;
const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  const merchant = await svc.createMerchant();
  const k = keysOf(merchant, "sandbox");
  headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
});
afterAll(async () => {
  await svc?.close();
});

describe("payment links: maxPayments under concurrency", () => {
  it("50 concurrent payers of a link with maxPayments 20 → exactly 20 paid, 30 refused", async () => {
    const link = await createLink(svc, headers, {
      title: "Limited",
      amount: 2,
      currencyTypes: [TRC],
      maxPayments: 20,
    });
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const r = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC });
        if (r.status !== 303) return { status: r.status, text: r.text };
        const id = (r.location ?? "").replace("/pay/", "");
        const paid = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${id}/pay`, {
          headers,
          json: {},
        });
        expect(paid.status, paid.text).toBe(202);
        return { status: 303, id };
      }),
    );
    const opened = outcomes.flatMap((o) => ("id" in o && o.id ? [o.id] : []));
    const refused = outcomes.filter((o) => o.status !== 303);
    expect(opened).toHaveLength(20);
    expect(refused).toHaveLength(30);
    // Refused while the 20 slots are held by open sessions (409), or once all 20 are paid (410).
    for (const r of refused) {
      const text = "text" in r ? (r.text ?? "") : "";
      if (r.status === 409) expect(text).toContain("Every payment this link accepts is taken");
      else {
        expect(r.status).toBe(410);
        expect(text).toContain("received all the payments it accepts");
      }
    }
    // Every opened session confirms.
    await waitFor(
      async () => {
        const statuses = await Promise.all(
          opened.map(async (id) => (await sessionOf(svc, headers, id)).status),
        );
        return statuses.every((s) => s === "confirmed");
      },
      30_000,
      100,
    );
    const counted = dataOf(
      await callOperation(svc.urls.sandbox, "getPaymentLink", { headers, params: { id: link.id } }),
      200,
    );
    expect(counted).toMatchObject({ payments: 20, totalPaid: 40 });
    const sessions = await svc.database.db
      .selectFrom("transactions")
      .select(["id", "status"])
      .where("payment_link_id", "=", link.id)
      .execute();
    expect(sessions).toHaveLength(20);
    expect(sessions.every((s) => s.status === "confirmed")).toBe(true);
    // All paid: the link is closed for good.
    const after = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC });
    expect(after.status).toBe(410);
    expect(after.text).toContain("received all the payments it accepts");
  }, 60_000);

  it("a session that fails unpaid frees its slot", async () => {
    const link = await createLink(svc, headers, {
      title: "One",
      amount: 1,
      currencyTypes: [TRC],
      maxPayments: 1,
    });
    const first = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC });
    expect(first.status, first.text).toBe(303);
    expect((await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC })).status).toBe(409);
    // The first session ends unpaid (as the expiry job ends it): its slot is free again.
    const id = (first.location ?? "").replace("/pay/", "");
    await svc.database.db
      .updateTable("transactions")
      .set({ status: "failed" })
      .where("id", "=", id)
      .execute();
    const again = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC });
    expect(again.status, again.text).toBe(303);
  });
});
