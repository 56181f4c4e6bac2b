import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatCredential } from "../../src/domain/api-key-format.js";
import type { App } from "../../src/http/app-types.js";
import { type CreatedMerchant, issueKeyPair, revokeApiKey } from "../../src/merchants/index.js";
import { call, callWithHost, keysOf, startTestService, type TestService } from "../support/harness.js";

// A route that requires the secret, standing in for approve/reject and webhook secret reads.
function probeRoutes(app: App) {
  app.get(
    "/api/v1/public/test-secret-required",
    { config: { auth: "apiKey", requireSecret: true, tier: "financial", permission: "money:read" } },
    async (request) => ({ success: true, data: { merchantId: request.principal?.merchantId } }),
  );
}

let svc: TestService;
let merchant: CreatedMerchant;

beforeAll(async () => {
  svc = await startTestService({ extraRoutes: probeRoutes });
  merchant = await svc.createMerchant();
});
afterAll(() => svc?.close());

const ACCOUNT = "/api/v1/public/account";

function expectAuthError(r: { status: number; body: any }, status: 401 | 403) {
  expect(r.status).toBe(status);
  expect(r.body).toEqual({
    success: false,
    error: {
      code: status === 401 ? "INVALID_AUTH" : "FORBIDDEN",
      message: expect.any(String),
      details: {},
      requestId: expect.stringMatching(/^req_/),
    },
  });
}

describe("API-key channel: 401 INVALID_AUTH", () => {
  it("rejects a request without apikey", async () => {
    expectAuthError(await call(svc.urls.sandbox, ACCOUNT), 401);
  });

  it("a route that takes a key pair or a session, called with neither, names the apikey header (not the session)", async () => {
    for (const [method, path] of [
      ["POST", "/checkout/session"],
      ["POST", "/wallet/generate"],
      ["POST", "/api/v1/webhook/url"],
    ] as const) {
      const r = await call(svc.urls.sandbox, path, { method, ...(method === "POST" ? { json: {} } : {}) });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.body.error.message, path).toMatch(/apikey header/);
    }
    // A session that is sent but not valid is still told about the session.
    const stale = await call(svc.urls.sandbox, "/checkout/session", {
      json: {},
      headers: { authorization: "Bearer not-a-token" },
    });
    expect(stale.status).toBe(401);
    expect(stale.body.error.message).toMatch(/dashboard session/);
  });

  it("rejects a malformed key and a key whose checksum is wrong", async () => {
    expectAuthError(await call(svc.urls.sandbox, ACCOUNT, { headers: { apikey: "hello" } }), 401);
    const good = keysOf(merchant, "sandbox").apiKey;
    const last = good.at(-1) === "A" ? "B" : "A";
    expectAuthError(
      await call(svc.urls.sandbox, ACCOUNT, { headers: { apikey: good.slice(0, -1) + last } }),
      401,
    );
  });

  it("rejects a well-formed key that does not exist", async () => {
    const unknown = formatCredential("key", "sandbox", randomBytes(32));
    expectAuthError(await call(svc.urls.sandbox, ACCOUNT, { headers: { apikey: unknown } }), 401);
  });

  it("rejects a secret used as the key", async () => {
    const k = keysOf(merchant, "sandbox");
    expectAuthError(await call(svc.urls.sandbox, ACCOUNT, { headers: { apikey: k.apiSecret } }), 401);
  });

  it("rejects a present but wrong x-api-secret, including another pair's secret and an empty one", async () => {
    const k = keysOf(merchant, "sandbox");
    const other = await svc.createMerchant();
    for (const secret of ["sk_test_wrong", keysOf(other, "sandbox").apiSecret, ""]) {
      const r = await call(svc.urls.sandbox, ACCOUNT, {
        headers: { apikey: k.apiKey, "x-api-secret": secret },
      });
      expectAuthError(r, 401);
    }
  });

  it("requires the secret where the route says so", async () => {
    const k = keysOf(merchant, "sandbox");
    const without = await call(svc.urls.sandbox, "/api/v1/public/test-secret-required", {
      headers: { apikey: k.apiKey },
    });
    expectAuthError(without, 401);
    expect(without.body.error.message).toMatch(/x-api-secret/);
    const withIt = await call(svc.urls.sandbox, "/api/v1/public/test-secret-required", {
      headers: { apikey: k.apiKey, "x-api-secret": k.apiSecret },
    });
    expect(withIt.status).toBe(200);
    expect(withIt.body.data.merchantId).toBe(merchant.id);
  });
});

describe("API-key channel: accepted requests", () => {
  it("accepts the key alone where the secret is optional, and both headers", async () => {
    const k = keysOf(merchant, "sandbox");
    const alone = await call(svc.urls.sandbox, ACCOUNT, { headers: { apikey: k.apiKey } });
    expect(alone.status).toBe(200);
    expect(alone.body.data).toMatchObject({ clientId: merchant.id, environment: "sandbox", apiKeyId: k.id });
    const both = await call(svc.urls.sandbox, ACCOUNT, {
      headers: { apikey: k.apiKey, "x-api-secret": k.apiSecret },
    });
    expect(both.status).toBe(200);
  });

  it("treats header names case-insensitively (apiKey, APIKEY, X-API-SECRET)", async () => {
    const k = keysOf(merchant, "production");
    const r = await call(svc.urls.production, ACCOUNT, {
      headers: { apiKey: k.apiKey, "X-API-SECRET": k.apiSecret },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.environment).toBe("production");
    const upper = await call(svc.urls.production, ACCOUNT, { headers: { APIKEY: k.apiKey } });
    expect(upper.status).toBe(200);
  });
});

describe("API-key channel: 403 FORBIDDEN", () => {
  it("refuses a key pair in the other environment, both ways", async () => {
    const sandbox = keysOf(merchant, "sandbox");
    const production = keysOf(merchant, "production");
    const a = await call(svc.urls.production, ACCOUNT, {
      headers: { apikey: sandbox.apiKey, "x-api-secret": sandbox.apiSecret },
    });
    expectAuthError(a, 403);
    expect(a.body.error.message).toMatch(/sandbox/);
    const b = await call(svc.urls.sandbox, ACCOUNT, {
      headers: { apikey: production.apiKey, "x-api-secret": production.apiSecret },
    });
    expectAuthError(b, 403);
  });

  it("selects the environment by Host behind a proxy", async () => {
    // A proxy forwarding the sandbox host name to the production listener.
    const sandboxHost = new URL(svc.config.http.sandboxBaseUrl).host;
    const k = keysOf(merchant, "sandbox");
    const r = await callWithHost(svc.urls.production, ACCOUNT, sandboxHost, { apikey: k.apiKey });
    expect(r.status).toBe(200);
    expect(r.body.data.environment).toBe("sandbox");
  });

  it("refuses a revoked pair", async () => {
    const pair = await issueKeyPair(svc.database.db, merchant.id, "sandbox", null);
    const headers = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
    expect((await call(svc.urls.sandbox, ACCOUNT, { headers })).status).toBe(200);
    expect(await revokeApiKey(svc.database.db, pair.id, "revoked")).toBe(true);
    const r = await call(svc.urls.sandbox, ACCOUNT, { headers });
    expectAuthError(r, 403);
    expect(r.body.error.message).toMatch(/revoked/);
  });

  it("refuses a rotated pair at once while the new pair works", async () => {
    const old = await issueKeyPair(svc.database.db, merchant.id, "production", null);
    const fresh = await issueKeyPair(svc.database.db, merchant.id, "production", null);
    await revokeApiKey(svc.database.db, old.id, "rotated", fresh.id);
    const r = await call(svc.urls.production, ACCOUNT, {
      headers: { apikey: old.apiKey, "x-api-secret": old.apiSecret },
    });
    expectAuthError(r, 403);
    expect(r.body.error.message).toMatch(/rotated/);
    const ok = await call(svc.urls.production, ACCOUNT, {
      headers: { apikey: fresh.apiKey, "x-api-secret": fresh.apiSecret },
    });
    expect(ok.status).toBe(200);
  });

  it("still answers 401 to a revoked key with a wrong secret (the secret is checked first)", async () => {
    const pair = await issueKeyPair(svc.database.db, merchant.id, "sandbox", null);
    await revokeApiKey(svc.database.db, pair.id, "revoked");
    const r = await call(svc.urls.sandbox, ACCOUNT, {
      headers: { apikey: pair.apiKey, "x-api-secret": "nope" },
    });
    expectAuthError(r, 401);
  });

  it("applies the merchant's IP allowlist per environment", async () => {
    const m = await svc.createMerchant();
    const k = keysOf(m, "sandbox");
    const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
    const setList = (list: string[]) =>
      svc.database.db
        .updateTable("merchant_settings")
        .set({ ip_allowlist: list })
        .where("merchant_id", "=", m.id)
        .where("environment", "=", "sandbox")
        .execute();

    await setList(["203.0.113.7", "2001:db8::/32"]);
    const denied = await call(svc.urls.sandbox, ACCOUNT, { headers });
    expectAuthError(denied, 403);
    expect(denied.body.error.message).toMatch(/allowlist/);
    // The production pair of the same merchant is governed by the production allowlist (empty).
    const p = keysOf(m, "production");
    expect((await call(svc.urls.production, ACCOUNT, { headers: { apikey: p.apiKey } })).status).toBe(200);

    await setList(["203.0.113.7", "127.0.0.0/8"]);
    expect((await call(svc.urls.sandbox, ACCOUNT, { headers })).status).toBe(200);
  });

  it("refuses a suspended merchant", async () => {
    const m = await svc.createMerchant();
    await svc.database.db
      .updateTable("merchants")
      .set({ status: "suspended" })
      .where("id", "=", m.id)
      .execute();
    const k = keysOf(m, "sandbox");
    expectAuthError(await call(svc.urls.sandbox, ACCOUNT, { headers: { apikey: k.apiKey } }), 403);
  });
});
