import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin } from "../../src/auth/index.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { fill, inBatches, type RawResponse, rawRequest, spellings } from "./support.js";

// Finding 1 (issue #18): the admin area was decided from the raw request URL while the router
// matched the decoded path, so `GET /api/v1/%61dmin/merchants` with a merchant session listed every
// merchant. Now every authorization decision comes from the matched route's own config, and the
// admin handlers check the role again. This sends every admin route the app has (from its own
// OpenAPI document), under many spellings, to a merchant session on both listeners; and an admin
// session to every merchant route and every admin write under spellings.

const PASSWORD = "correct horse battery";
const WRITE_METHODS = ["POST", "PUT", "PATCH", "DELETE"];

interface Op {
  method: string;
  template: string;
}

let svc: TestService;
let ops: Op[] = [];
const merchant = { token: "", email: "" };
const admin = { token: "" };
const victim = { email: "", id: "", transactionId: "" };
const values: Record<string, string> = {};

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_DASHBOARD: "1000000", RATE_LIMIT_STANDARD: "1000000", RATE_LIMIT_AUTH: "1000" },
  });
  const app = svc.proc.app;
  if (!app) throw new Error("no app");
  const doc = app.swagger() as { paths: Record<string, Record<string, unknown>> };
  ops = Object.entries(doc.paths).flatMap(([template, byMethod]) =>
    Object.keys(byMethod).map((method) => ({ method: method.toUpperCase(), template })),
  );

  // The victim: another merchant with a transaction in each environment.
  victim.email = `victim-${Date.now()}@example.com`;
  const v = await svc.createMerchant(victim.email);
  victim.id = v.id;
  const session = await call(svc.urls.sandbox, "/checkout/session", {
    headers: { apikey: keysOf(v, "sandbox").apiKey },
    json: { amount: 5, currencyType: "USDT-TRC20", orderId: "victim-order" },
  });
  expect(session.status, session.text).toBe(201);
  const tx = await svc.database.db
    .selectFrom("transactions")
    .select("id")
    .where("merchant_id", "=", v.id)
    .executeTakeFirstOrThrow();
  victim.transactionId = tx.id;

  // The attacker: an ordinary merchant account with a dashboard session.
  merchant.email = `attacker-${Date.now()}@example.com`;
  const reg = await call(svc.urls.production, "/api/v1/auth/register", {
    json: { email: merchant.email, password: PASSWORD, companyName: "Mallory" },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  merchant.token = reg.body.data.accessToken;

  const adminEmail = `admin-${Date.now()}@example.com`;
  await createAdmin(svc.database.db, { email: adminEmail, password: PASSWORD });
  const login = await call(svc.urls.production, "/api/v1/auth/login", {
    json: { email: adminEmail, password: PASSWORD },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(login.status, login.text).toBe(200);
  admin.token = login.body.data.accessToken;

  Object.assign(values, {
    id: "x",
    webhookEventId: "whe_x",
    address: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW",
  });
}, 120_000);

afterAll(async () => {
  await svc?.close();
});

const bases = () => [
  ["production", svc.urls.production],
  ["sandbox", svc.urls.sandbox],
];

function idFor(template: string): string {
  if (template.startsWith("/api/v1/admin/merchants/")) return victim.id;
  if (template.startsWith("/api/v1/admin/transactions/")) return victim.transactionId;
  return "x";
}

/** A refusal: 403 or 404 in the error envelope, and nothing of the victim's in the body. */
function refusal(r: RawResponse, what: string): string | undefined {
  if (r.text.includes(victim.email)) return `${what} → ${r.status} shows the victim's e-mail`;
  if (r.status !== 403 && r.status !== 404) return `${what} → ${r.status} ${r.text.slice(0, 160)}`;
  if (r.body?.success !== false || typeof r.body?.error?.code !== "string")
    return `${what} → ${r.status} outside the error envelope: ${r.text.slice(0, 160)}`;
  if (r.body?.data !== undefined) return `${what} → data in a refusal`;
  return undefined;
}

describe("admin views under other spellings of their path", () => {
  it("the app has admin routes, and the merchant session is refused on their canonical paths", async () => {
    const adminOps = ops.filter((o) => o.template.startsWith("/api/v1/admin/"));
    expect(adminOps.map((o) => `${o.method} ${o.template}`).sort()).toEqual(
      expect.arrayContaining(["GET /api/v1/admin/merchants", "GET /api/v1/admin/transactions"]),
    );
    for (const o of adminOps) {
      const path = fill(o.template, { ...values, id: idFor(o.template) });
      const asAdmin = await rawRequest(svc.urls.production, "GET", path, {
        headers: { authorization: `Bearer ${admin.token}` },
      });
      expect(asAdmin.status, `${path} as admin`).toBe(200);
      const asMerchant = await rawRequest(svc.urls.production, "GET", path, {
        headers: { authorization: `Bearer ${merchant.token}` },
      });
      expect(refusal(asMerchant, path)).toBeUndefined();
    }
    // The admin's own list does contain the victim (so the check below can see a leak).
    const list = await rawRequest(svc.urls.production, "GET", "/api/v1/admin/merchants?limit=100", {
      headers: { authorization: `Bearer ${admin.token}` },
    });
    expect(list.text).toContain(victim.email);
  });

  it("refuses a merchant session on every admin route under every spelling, on both listeners", async () => {
    const adminOps = ops.filter((o) => o.template.startsWith("/api/v1/admin/") && o.method === "GET");
    const attempts: { base: string; env: string; path: string; method: string }[] = [];
    for (const o of adminOps) {
      for (const spelled of spellings(o.template)) {
        const path = fill(spelled, { ...values, id: idFor(o.template) });
        for (const [env, base] of bases()) {
          attempts.push({ base: base as string, env: env as string, path, method: "GET" });
          attempts.push({ base: base as string, env: env as string, path, method: "HEAD" });
        }
      }
    }
    expect(attempts.length).toBeGreaterThan(400);
    const problems: string[] = [];
    await inBatches(attempts, 16, async (a) => {
      const r = await rawRequest(a.base, a.method, a.path, {
        headers: { authorization: `Bearer ${merchant.token}` },
      });
      if (a.method === "HEAD") {
        if (r.status < 400) problems.push(`HEAD ${a.path} (${a.env}) → ${r.status}`);
        return;
      }
      const p = refusal(r, `GET ${a.path} (${a.env})`);
      if (p) problems.push(p);
    });
    expect(problems).toEqual([]);
  }, 120_000);

  it("refuses an admin session on every merchant route and every admin write, under spellings", async () => {
    // The merchant routes are those that take the merchant's dashboard session (not the API-key
    // routes, which do not look at a session, and not the account routes under /api/v1/auth/).
    const merchantOps: Op[] = [];
    for (const o of ops) {
      if (o.template.startsWith("/api/v1/admin/") || o.template.startsWith("/api/v1/auth/")) continue;
      const r = await rawRequest(svc.urls.sandbox, o.method, fill(o.template, values), {
        headers: { authorization: `Bearer ${merchant.token}`, "x-environment": "sandbox" },
        ...(o.method === "GET" || o.method === "DELETE" ? {} : { body: "{}" }),
      });
      if (
        r.status !== 401 &&
        r.status !== 404 &&
        !o.template.startsWith("/pay/") &&
        o.template !== "/healthz"
      )
        if (o.template !== "/readyz") merchantOps.push(o);
    }
    expect(merchantOps.map((o) => `${o.method} ${o.template}`)).toEqual(
      expect.arrayContaining([
        "GET /api/v1/dashboard/balance",
        "PATCH /api/v1/dashboard/settings",
        "POST /api/v1/dashboard/api-keys",
        "POST /api/v1/webhook/url",
      ]),
    );
    const adminReads = ops.filter((o) => o.template.startsWith("/api/v1/admin/") && o.method === "GET");
    const attempts: { base: string; method: string; path: string }[] = [];
    for (const [, base] of bases()) {
      for (const o of merchantOps) {
        for (const spelled of [o.template, ...spellings(o.template, { full: false })])
          attempts.push({ base: base as string, method: o.method, path: fill(spelled, values) });
      }
      for (const o of adminReads) {
        for (const spelled of [o.template, ...spellings(o.template, { full: false })])
          for (const method of WRITE_METHODS)
            attempts.push({
              base: base as string,
              method,
              path: fill(spelled, { ...values, id: idFor(o.template) }),
            });
      }
    }
    const problems: string[] = [];
    await inBatches(attempts, 16, async (a) => {
      const r = await rawRequest(a.base, a.method, a.path, {
        headers: { authorization: `Bearer ${admin.token}`, "x-environment": "sandbox" },
        ...(a.method === "GET" || a.method === "DELETE" ? {} : { body: "{}" }),
      });
      const p = refusal(r, `${a.method} ${a.path} as admin`);
      if (p) problems.push(p);
    });
    expect(problems).toEqual([]);
    // Nothing was written: the victim and the attacker are as they were.
    const merchants = await svc.database.db.selectFrom("merchants").select(["id", "status"]).execute();
    expect(merchants.every((m) => m.status === "active")).toBe(true);
  }, 120_000);
});

describe("the other decisions that were read from the URL", () => {
  it("a write from a foreign origin to a dashboard route is refused under every spelling (CORS Origin check)", async () => {
    const problems: string[] = [];
    const templates = ["/api/v1/auth/login", "/api/v1/auth/register"];
    const attempts = templates.flatMap((t) => [t, ...spellings(t)]);
    await inBatches(attempts, 8, async (path) => {
      const r = await rawRequest(svc.urls.production, "POST", path, {
        headers: { origin: "https://evil.example" },
        body: JSON.stringify({ email: merchant.email, password: PASSWORD, companyName: "x" }),
      });
      if (r.status !== 403 && r.status !== 404) problems.push(`POST ${path} → ${r.status}`);
      if (r.headers["access-control-allow-origin"]) problems.push(`POST ${path} → CORS headers`);
      if (r.headers["set-cookie"]) problems.push(`POST ${path} → a session cookie`);
    });
    expect(problems).toEqual([]);
  }, 60_000);

  it("the rate-limit tier of a matched route is its own under every spelling", async () => {
    for (const path of [
      "/api/v1/admin/merchants",
      ...spellings("/api/v1/admin/merchants", { full: false }),
    ]) {
      const r = await rawRequest(svc.urls.production, "GET", path, {
        headers: { authorization: `Bearer ${merchant.token}` },
      });
      // Every answer is counted somewhere: a matched spelling in the route's own (Dashboard) tier.
      expect(r.headers["ratelimit-limit"], path).toBeDefined();
      if (r.status === 403) expect(r.headers["ratelimit-policy"], path).toBe("1000000;w=900");
    }
  });
});
