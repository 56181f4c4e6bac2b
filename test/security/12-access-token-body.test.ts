import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Browser } from "../dashboard/support.js";
import { call, startTestService, type TestService } from "../support/harness.js";

// Reported with issue #18: register, login and refresh returned the access token in the JSON body
// as well as in the httpOnly cookie, so script on the page (XSS) could read it and use it
// elsewhere. Now the body carries it only for a client that asks with `X-Token-Delivery: bearer`
// (declared in the routes' schemas, so the OpenAPI document shows it), and a refresh hands one
// out only for a session that was signed in that way: a browser session never gets a body token,
// whatever header a script adds. Cross-origin pages cannot send the header at all (CORS).

const PASSWORD = "correct horse battery";
const BEARER = { "x-token-delivery": "bearer" };
let svc: TestService;
let n = 0;

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_AUTH: "10000", DOCS_USER: "docs", DOCS_PASSWORD: "s3cret-docs" },
  });
});
afterAll(() => svc?.close());

const email = () => `tokens${++n}-${Date.now()}@example.com`;

function register(b: Browser, address: string, headers: Record<string, string> = {}) {
  return b.req("/api/v1/auth/register", {
    json: { email: address, password: PASSWORD, companyName: "Acme" },
    headers,
  });
}

async function me(token: string) {
  return call(svc.urls.sandbox, "/api/v1/auth/me", { headers: { authorization: `Bearer ${token}` } });
}

describe("the access token is in the body only when asked for", () => {
  it("register, login and refresh of a browser give no body token (the cookie carries it)", async () => {
    const b = new Browser(svc.urls.production);
    const address = email();
    const reg = await register(b, address);
    expect(reg.status, reg.text).toBe(201);
    expect(reg.body.data).not.toHaveProperty("accessToken");
    expect(reg.body.data.expiresIn).toBeGreaterThan(0);
    expect(reg.text).not.toContain(b.cookies.get("sg_access") as string);
    expect((await b.req("/api/v1/auth/me")).status).toBe(200);

    const browser = new Browser(svc.urls.production);
    const login = await browser.req("/api/v1/auth/login", { json: { email: address, password: PASSWORD } });
    expect(login.status, login.text).toBe(200);
    expect(login.body.data).not.toHaveProperty("accessToken");
    expect(login.text).not.toContain(browser.cookies.get("sg_access") as string);

    const refreshed = await browser.req("/api/v1/auth/refresh", { method: "POST" });
    expect(refreshed.status, refreshed.text).toBe(200);
    expect(refreshed.body.data).not.toHaveProperty("accessToken");
    expect((await browser.req("/api/v1/auth/me")).status).toBe(200);
  });

  it("a script in a browser session cannot get one by adding the header to a refresh", async () => {
    const b = new Browser(svc.urls.production);
    expect((await register(b, email())).status).toBe(201);
    const r = await b.req("/api/v1/auth/refresh", { method: "POST", headers: BEARER });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).not.toHaveProperty("accessToken");
    expect(r.text).not.toContain(b.cookies.get("sg_access") as string);
  });

  it("a client that asks with X-Token-Delivery: bearer gets it from register, login and refresh", async () => {
    const address = email();
    const reg = await register(new Browser(svc.urls.production), address, BEARER);
    expect(reg.status, reg.text).toBe(201);
    expect(typeof reg.body.data.accessToken).toBe("string");
    expect((await me(reg.body.data.accessToken)).status).toBe(200);

    const client = new Browser(svc.urls.production, undefined); // a server-side client: no Origin
    const login = await client.req("/api/v1/auth/login", {
      json: { email: address, password: PASSWORD },
      headers: BEARER,
    });
    expect(login.status, login.text).toBe(200);
    expect((await me(login.body.data.accessToken)).status).toBe(200);

    const refreshed = await client.req("/api/v1/auth/refresh", { method: "POST", headers: BEARER });
    expect(refreshed.status, refreshed.text).toBe(200);
    expect((await me(refreshed.body.data.accessToken)).status).toBe(200);
    // Without the header, the same session's refresh answers without it.
    const plain = await client.req("/api/v1/auth/refresh", { method: "POST" });
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.data).not.toHaveProperty("accessToken");
  });

  it("an unknown delivery is a 400 on the header; the header is in the OpenAPI document", async () => {
    const bad = await call(svc.urls.production, "/api/v1/auth/login", {
      json: { email: email(), password: PASSWORD },
      headers: { "x-token-delivery": "body" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("VALIDATION_ERROR");
    expect(bad.body.error.details.fields[0].field).toBe("x-token-delivery");

    const doc = await call(svc.urls.production, "/docs/openapi.json", {
      headers: { authorization: `Basic ${Buffer.from("docs:s3cret-docs").toString("base64")}` },
    });
    expect(doc.status).toBe(200);
    for (const path of ["/api/v1/auth/register", "/api/v1/auth/login", "/api/v1/auth/refresh"]) {
      const params = (doc.body.paths[path].post.parameters ?? []) as Array<{ in: string; name: string }>;
      expect(params.some((p) => p.in === "header" && p.name.toLowerCase() === "x-token-delivery")).toBe(true);
    }
  });
});
