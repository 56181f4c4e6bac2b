import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../../support/harness.js";
import { addMember, type Member, registerOwner } from "../../team/support.js";

// Outside review of issue #41: a payment link belongs to one merchant in one environment. Another
// merchant, another environment's key or base URL, and a team member without `payments:create`
// can neither read nor deactivate nor create one.
let svc: TestService;
let alice: Awaited<ReturnType<typeof registerOwner>>;
let mallory: Awaited<ReturnType<typeof registerOwner>>;
let viewer: Member;
let linkId: string;

const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  alice = await registerOwner(svc);
  mallory = await registerOwner(svc);
  viewer = await addMember(svc, alice.bearer, "viewer");
  const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
    headers: alice.sandboxApi,
    json: { title: "Alice's ticket", amount: 5, currencyTypes: [TRC] },
  });
  expect(r.status, r.text).toBe(201);
  linkId = r.body.data.id;
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

async function stillActive() {
  const r = await call(svc.urls.sandbox, `/api/v1/public/payment-links/${linkId}`, {
    headers: alice.sandboxApi,
  });
  expect(r.status, r.text).toBe(200);
  return r.body.data.active as boolean;
}

describe("payment links: cross-merchant and cross-environment access", () => {
  it("another merchant's API key can neither read nor deactivate the link (404)", async () => {
    const get = await call(svc.urls.sandbox, `/api/v1/public/payment-links/${linkId}`, {
      headers: mallory.sandboxApi,
    });
    expect(get.status, get.text).toBe(404);
    const off = await call(svc.urls.sandbox, `/api/v1/public/payment-links/${linkId}/deactivate`, {
      method: "POST",
      headers: mallory.sandboxApi,
    });
    expect(off.status, off.text).toBe(404);
    const list = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
      headers: mallory.sandboxApi,
    });
    expect(list.status, list.text).toBe(200);
    expect(JSON.stringify(list.body)).not.toContain(linkId);
    expect(await stillActive()).toBe(true);
  });

  it("another merchant's dashboard session can neither read nor deactivate the link (404)", async () => {
    const get = await call(svc.urls.sandbox, `/api/v1/dashboard/payment-links/${linkId}`, {
      headers: mallory.bearer,
    });
    expect(get.status, get.text).toBe(404);
    const off = await call(svc.urls.sandbox, `/api/v1/dashboard/payment-links/${linkId}/deactivate`, {
      method: "POST",
      headers: mallory.bearer,
    });
    expect(off.status, off.text).toBe(404);
    expect(await stillActive()).toBe(true);
  });

  it("the merchant's own production key does not reach a sandbox link", async () => {
    const off = await call(svc.urls.production, `/api/v1/public/payment-links/${linkId}/deactivate`, {
      method: "POST",
      headers: alice.productionApi,
    });
    expect(off.status, off.text).toBe(404);
    const prodDash = await call(svc.urls.sandbox, `/api/v1/dashboard/payment-links/${linkId}/deactivate`, {
      method: "POST",
      headers: { ...alice.bearer, "x-environment": "production" },
    });
    expect([403, 404]).toContain(prodDash.status);
    expect(await stillActive()).toBe(true);
  });

  it("a sandbox link is not found on the production base URL (page and form)", async () => {
    const page = await fetch(`${svc.urls.production}/l/${linkId}`);
    expect(page.status).toBe(404);
    await page.text();
    const post = await fetch(`${svc.urls.production}/l/${linkId}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ currencyType: TRC }).toString(),
    });
    expect(post.status).toBe(404);
    await post.text();
  });

  it("the API key without its secret cannot create or deactivate a link", async () => {
    const create = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
      headers: { apikey: alice.sandboxApi.apikey },
      json: { title: "no secret", amount: 1, currencyTypes: [TRC] },
    });
    expect(create.status, create.text).not.toBe(201);
    const off = await call(svc.urls.sandbox, `/api/v1/public/payment-links/${linkId}/deactivate`, {
      method: "POST",
      headers: { apikey: alice.sandboxApi.apikey },
    });
    expect(off.status, off.text).not.toBe(200);
    expect(await stillActive()).toBe(true);
  });
});

describe("payment links: idempotency keys are per merchant", () => {
  it("another merchant reusing the same Idempotency-Key gets its own link, never the first one's", async () => {
    const key = `shared-key-${Date.now()}`;
    const a = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
      headers: { ...alice.sandboxApi, "idempotency-key": key },
      json: { title: "Alice idem", amount: 3, currencyTypes: [TRC] },
    });
    expect(a.status, a.text).toBe(201);
    const m = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
      headers: { ...mallory.sandboxApi, "idempotency-key": key },
      json: { title: "Alice idem", amount: 3, currencyTypes: [TRC] },
    });
    expect(m.status, m.text).toBe(201);
    expect(m.body.data.id).not.toBe(a.body.data.id);
    const own = await call(svc.urls.sandbox, `/api/v1/public/payment-links/${m.body.data.id}`, {
      headers: mallory.sandboxApi,
    });
    expect(own.status, own.text).toBe(200);
  });
});

describe("payment links: a viewer (no payments:create)", () => {
  it("may read but neither create nor deactivate links on the dashboard", async () => {
    const read = await call(svc.urls.sandbox, `/api/v1/dashboard/payment-links/${linkId}`, {
      headers: viewer.bearer,
    });
    expect(read.status, read.text).toBe(200);
    const create = await call(svc.urls.sandbox, "/api/v1/dashboard/payment-links", {
      headers: viewer.bearer,
      json: { title: "viewer's link", amount: 1, currencyTypes: [TRC] },
    });
    expect(create.status, create.text).toBe(403);
    const off = await call(svc.urls.sandbox, `/api/v1/dashboard/payment-links/${linkId}/deactivate`, {
      method: "POST",
      headers: viewer.bearer,
    });
    expect(off.status, off.text).toBe(403);
    expect(await stillActive()).toBe(true);
  });

  it("may not change the checkout page's branding", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/dashboard/settings/branding", {
      method: "PATCH",
      headers: viewer.bearer,
      json: { displayName: "Viewer's Shop" },
    });
    expect(r.status, r.text).toBe(403);
    const read = await call(svc.urls.sandbox, "/api/v1/dashboard/settings/branding", {
      headers: alice.bearer,
    });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data.displayName).not.toBe("Viewer's Shop");
  });
});
