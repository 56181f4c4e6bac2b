import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { Browser } from "./support.js";

const PASSWORD = "correct horse battery";
const PROD_ENV = {
  NODE_ENV: "production",
  SECRET_ENCRYPTION_KEY: "a".repeat(64),
  JWT_SECRET: "j".repeat(40),
  INTERNAL_SHARED_SECRET: "i".repeat(40),
  METRICS_TOKEN: "m".repeat(32),
  MASTER_MNEMONIC:
    "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about",
  RATE_LIMIT_AUTH: "1000",
};

describe("production mode", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: PROD_ENV });
  });
  afterAll(() => svc?.close());

  it("sets Secure, SameSite=Strict, httpOnly cookies and has no dev mail outbox", async () => {
    const b = new Browser(svc.urls.production);
    const r = await b.req("/api/v1/auth/register", {
      json: { email: "prod@example.com", password: PASSWORD, companyName: "Prod" },
      headers: { "x-token-delivery": "bearer" },
    });
    expect(r.status, r.text).toBe(201);
    for (const name of ["sg_access", "sg_refresh"]) {
      const c = b.lastSetCookie.find((x) => x.startsWith(`${name}=`)) as string;
      expect(c).toMatch(/; HttpOnly/i);
      expect(c).toMatch(/; Secure/i);
      expect(c).toMatch(/; SameSite=Strict/i);
    }
    const mail = await call(svc.urls.production, "/api/v1/dashboard/dev/mail", {
      headers: { authorization: `Bearer ${r.body.data.accessToken}` },
    });
    expect(mail.status).toBe(404);
    // No SMTP_URL in production: mail cannot be sent and the local outbox is refused.
    const otp = await call(svc.urls.production, "/api/v1/auth/otp", {
      json: { purpose: "payout" },
      headers: { authorization: `Bearer ${r.body.data.accessToken}` },
    });
    expect(otp.status).toBe(500);
    const outbox = await svc.database.db.selectFrom("mail_outbox").selectAll().execute();
    expect(outbox).toHaveLength(0);
  });
});

describe("development mode without SMTP_URL", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({
      env: { RATE_LIMIT_AUTH: "1000", DOCS_USER: "docs", DOCS_PASSWORD: "docs-pass-123" },
    });
  });
  afterAll(() => svc?.close());

  it("mails go to the local outbox (a table) and the dashboard lists the user's own", async () => {
    const b = new Browser(svc.urls.production);
    await b.req("/api/v1/auth/register", {
      json: { email: "dev@example.com", password: PASSWORD, companyName: "Dev" },
    });
    const other = new Browser(svc.urls.production);
    await other.req("/api/v1/auth/register", {
      json: { email: "other@example.com", password: PASSWORD, companyName: "O" },
    });
    expect((await b.req("/api/v1/auth/otp", { json: { purpose: "payout" } })).status).toBe(200);
    const listed = await b.req("/api/v1/dashboard/dev/mail");
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0].to).toBe("dev@example.com");
    expect(listed.body.data[0].subject).toMatch(/code: \d{6}$/);
    expect((await other.req("/api/v1/dashboard/dev/mail")).body.data).toHaveLength(0);
  });

  it("the OpenAPI document is valid OpenAPI 3.1, lists the dashboard routes, and every route has response schemas", async () => {
    const auth = { authorization: `Basic ${Buffer.from("docs:docs-pass-123").toString("base64")}` };
    const r = await call(svc.urls.production, "/docs/openapi.json", { headers: auth });
    expect(r.status).toBe(200);
    const validator = new Validator();
    const result = await validator.validate(r.body);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    const paths = r.body.paths as Record<
      string,
      Record<string, { responses?: Record<string, { content?: unknown; headers?: Record<string, unknown> }> }>
    >;
    // Every merchant and dashboard route of docs/api-reference.md (and the operator's admin views), with its method.
    const contractRoutes: [string, string][] = [
      ["post", "/checkout/session"],
      ["get", "/checkout/session/{id}"],
      ["post", "/wallet/generate"],
      ["post", "/api/v1/sandbox/checkout/{id}/pay"],
      ["post", "/api/v1/sandbox/wallet/{address}/pay"],
      ["post", "/api/v1/public/withdrawal-requests"],
      ["get", "/api/v1/public/withdrawal-requests"],
      ["get", "/api/v1/public/withdrawal-requests/{id}"],
      ["post", "/api/v1/public/withdrawal-requests/{id}/approve"],
      ["post", "/api/v1/public/withdrawal-requests/{id}/reject"],
      ["get", "/api/v1/public/payout/get"],
      ["get", "/api/v1/public/account"],
      ["get", "/api/v1/public/balance"],
      ["get", "/api/v1/public/transactions"],
      ["get", "/api/v1/public/transactions/{id}"],
      ["post", "/api/v1/webhook/url"],
      ["post", "/api/v1/webhook/test"],
      ["get", "/api/v1/webhook/secret"],
      ["post", "/api/v1/webhook/secret/rotate"],
      ["post", "/api/v1/webhook/retry/{webhookEventId}"],
      ["get", "/api/v1/webhook/events"],
      ["post", "/api/v1/auth/register"],
      ["post", "/api/v1/auth/login"],
      ["post", "/api/v1/auth/logout"],
      ["post", "/api/v1/auth/refresh"],
      ["post", "/api/v1/auth/password/forgot"],
      ["post", "/api/v1/auth/password/reset"],
      ["post", "/api/v1/auth/otp"],
      ["post", "/api/v1/auth/password/change"],
      ["post", "/api/v1/auth/2fa/setup"],
      ["post", "/api/v1/auth/2fa/enable"],
      ["post", "/api/v1/auth/2fa/disable"],
      ["get", "/api/v1/dashboard/api-keys"],
      ["post", "/api/v1/dashboard/api-keys"],
      ["post", "/api/v1/dashboard/api-keys/{id}/rotate"],
      ["delete", "/api/v1/dashboard/api-keys/{id}"],
      ["get", "/api/v1/dashboard/settings"],
      ["patch", "/api/v1/dashboard/settings"],
      ["post", "/api/v1/dashboard/payouts"],
      ["get", "/api/v1/dashboard/payouts"],
      ["get", "/api/v1/dashboard/balance"],
      ["get", "/api/v1/dashboard/transactions"],
      ["get", "/api/v1/dashboard/transactions/{id}"],
      ["get", "/api/v1/dashboard/withdrawal-requests"],
      ["get", "/api/v1/dashboard/withdrawal-requests/{id}"],
      ["post", "/api/v1/dashboard/withdrawal-requests/{id}/approve"],
      ["post", "/api/v1/dashboard/withdrawal-requests/{id}/reject"],
      ["get", "/api/v1/admin/merchants"],
      ["get", "/api/v1/admin/merchants/{id}"],
      ["get", "/api/v1/admin/transactions"],
      ["get", "/api/v1/admin/transactions/{id}"],
    ];
    const missing = contractRoutes.filter(([method, p]) => paths[p]?.[method] === undefined);
    expect(missing, "CONTRACT routes missing from the OpenAPI document").toEqual([]);
    for (const [path, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        // A browser form post may be answered only by a redirect (the payment link's page, POST /l/{id}: 303).
        const success = Object.entries(op.responses ?? {}).filter(([code]) => /^(2\d\d|303)$/.test(code));
        expect(success.length, `${method.toUpperCase()} ${path} declares a 2xx response`).toBeGreaterThan(0);
        for (const [code, res] of success) {
          // A redirect has no body: its Location header is what it declares.
          if (code === "303")
            expect(res.headers?.Location, `${method.toUpperCase()} ${path} 303 Location`).toBeDefined();
          else expect(res.content, `${method.toUpperCase()} ${path} ${code} has a schema`).toBeDefined();
        }
        if (path.startsWith("/api/v1/")) {
          expect(
            op.responses?.["401"] ?? op.responses?.["400"],
            `${method.toUpperCase()} ${path} errors`,
          ).toBeDefined();
        }
      }
    }
  });

  it("/docs serves the interactive reference behind the same basic auth", async () => {
    expect((await call(svc.urls.production, "/docs")).status).toBe(401);
    const auth = { authorization: `Basic ${Buffer.from("docs:docs-pass-123").toString("base64")}` };
    const page = await call(svc.urls.production, "/docs", { headers: auth });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(page.text).toContain("/docs/openapi.json");
    const js = await call(svc.urls.production, "/docs/js/scalar.js", { headers: auth });
    expect(js.status).toBe(200);
    // Nothing from another host: Scalar's CDN fonts are off (its page names no other origin).
    expect(page.text).toMatch(/"withDefaultFonts":\s*false/);
    expect(page.text).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost)[a-z0-9.-]+\.[a-z]{2,}\//i);
  });

  it("/docs/openapi.json lists first the server of the listener it was read from", async () => {
    const auth = { authorization: `Basic ${Buffer.from("docs:docs-pass-123").toString("base64")}` };
    for (const env of ["sandbox", "production"] as const) {
      const doc = await call(svc.urls[env], "/docs/openapi.json", { headers: auth });
      expect(doc.status).toBe(200);
      expect(doc.body.servers.map((s: { description: string }) => s.description.split(" ")[0])).toEqual(
        env === "sandbox" ? ["sandbox", "production"] : ["production", "sandbox"],
      );
    }
  });

  it("/docs answers 404 when not configured", async () => {
    const s = await startTestService();
    try {
      expect((await call(s.urls.production, "/docs")).status).toBe(404);
    } finally {
      await s.close();
    }
  });
});
