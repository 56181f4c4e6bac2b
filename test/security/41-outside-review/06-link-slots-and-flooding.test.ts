import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payerPost } from "../../links/support.js";
import { call, startTestService, type TestService } from "../../support/harness.js";
import { registerOwner } from "../../team/support.js";

// Outside review of issue #41: the payer's form is the first way to open checkout sessions (each a
// freshly derived, watched address, and a transaction and webhook of the merchant's) WITHOUT any
// credential. What bounds an anonymous client: the Public Page rate limit, the link's expiry and
// deactivation, and `maxPayments` — which must not let one anonymous client lock out every payer.
let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;

const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_PUBLIC_PAGE: "6" } });
  owner = await registerOwner(svc);
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

async function link(body: Record<string, unknown>) {
  const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
    headers: owner.sandboxApi,
    json: { title: "Limited", amount: 2, currencyTypes: [TRC], ...body },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
}

async function sessionsOf(linkId: string): Promise<number> {
  const rows = await svc.database.db
    .selectFrom("transactions")
    .select("id")
    .where("payment_link_id", "=", linkId)
    .execute();
  return rows.length;
}

describe("maxPayments: an anonymous client can hold every slot until its sessions expire (documented limit)", () => {
  // FINDING (design, kept; docs/decisions/payment-links.md 2): every OPEN session holds a slot until
  // it expires (30 min by default), and opening one needs no credential. So anyone can post the form
  // `maxPayments` times (within the Public Page limit) and the link answers 409 to real payers until
  // those sessions expire: a limited sale can be held up. Counting only paid sessions instead would
  // take money for payments the link cannot count. Not fixed in issue #41: a per-client hold limit is
  // the follow-up. Asserted here: what a payer meets then is the documented 409 page, nothing opened.
  it("a payer meets 409 'try again later' while one client holds every slot, and no session is opened for them", async () => {
    const id = await link({ maxPayments: 3 });
    for (let i = 0; i < 3; i++) {
      const r = await payerPost(svc.urls.sandbox, id, { currencyType: TRC }, { "user-agent": "griefer" });
      expect(r.status, r.text).toBe(303);
    }
    const realPayer = await payerPost(
      svc.urls.sandbox,
      id,
      { currencyType: TRC },
      { "user-agent": "real payer" },
    );
    expect(realPayer.status).toBe(409);
    expect(realPayer.text).toContain("Try again in a few minutes");
    expect(await sessionsOf(id)).toBe(3);
  });
});

describe("an anonymous client cannot open sessions without bound", () => {
  it("the Public Page limit stops a flood of form posts from one client (429, nothing created)", async () => {
    const id = await link({});
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await payerPost(
        svc.urls.sandbox,
        id,
        { currencyType: TRC },
        { "x-forwarded-for": `203.0.113.${i}` },
      );
      statuses.push(r.status);
    }
    expect(statuses.filter((s) => s === 303).length).toBeLessThanOrEqual(6);
    expect(statuses.slice(-1)[0]).toBe(429);
    expect(await sessionsOf(id)).toBeLessThanOrEqual(6);
  });
});

describe("expiry and deactivation edges", () => {
  it("a link past its expiresAt opens nothing (410), even a moment after", async () => {
    const local = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
    try {
      const o = await registerOwner(local);
      const r = await call(local.urls.sandbox, "/api/v1/public/payment-links", {
        headers: o.sandboxApi,
        json: {
          title: "Flash sale",
          amount: 2,
          currencyTypes: [TRC],
          expiresAt: new Date(Date.now() + 1_500).toISOString(),
        },
      });
      expect(r.status, r.text).toBe(201);
      const id = r.body.data.id as string;
      await new Promise((res) => setTimeout(res, 1_700));
      const post = await payerPost(local.urls.sandbox, id, { currencyType: TRC });
      expect(post.status, post.text).toBe(410);
      const page = await fetch(`${local.urls.sandbox}/l/${id}`);
      await page.text();
      expect(page.status).toBe(410);

      const d = await call(local.urls.sandbox, "/api/v1/public/payment-links", {
        headers: o.sandboxApi,
        json: { title: "Deactivated", amount: 2, currencyTypes: [TRC] },
      });
      const did = d.body.data.id as string;
      await call(local.urls.sandbox, `/api/v1/public/payment-links/${did}/deactivate`, {
        method: "POST",
        headers: o.sandboxApi,
      });
      const p2 = await payerPost(local.urls.sandbox, did, { currencyType: TRC });
      expect(p2.status, p2.text).toBe(410);
      const again = await call(local.urls.sandbox, `/api/v1/public/payment-links/${did}/deactivate`, {
        method: "POST",
        headers: o.sandboxApi,
      });
      expect(again.status).toBe(200);
      expect(again.body.data.active).toBe(false);
    } finally {
      await local.close();
    }
  }, 60_000);
});
