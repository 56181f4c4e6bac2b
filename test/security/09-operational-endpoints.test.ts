import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import { configForRole } from "../../src/config/secrets.js";
import { startTestService, type TestService } from "../support/harness.js";
import { rawRequest } from "./support.js";

// Finding 9 (issue #18): `/metrics` trusted any loopback peer — every request through a same-host
// proxy is one — and `/readyz` showed hot-wallet balances, lags and queue depths to anyone. Now
// (docs/api-reference.md#operations) `/metrics` needs `Authorization: Bearer <METRICS_TOKEN>`, production mode refuses
// to start without the token, and `/readyz` answers only its overall status without it.

const TOKEN = "metrics-token-0123456789abcdef";

const PRODUCTION_ENV = {
  NODE_ENV: "production",
  SECRET_ENCRYPTION_KEY: "a".repeat(64),
  JWT_SECRET: "j".repeat(40),
};

/** What refuses the configuration of an `api` process (parsing, then the role's requirements). */
function problemsOf(env: Record<string, string>) {
  try {
    configForRole(parseConfig(env), "api");
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("METRICS_TOKEN in production mode", () => {
  it("is required: start-up refuses without it and says why", () => {
    const problems = problemsOf(PRODUCTION_ENV);
    const p = problems.find((x) => x.variable === "METRICS_TOKEN");
    expect(p?.message).toMatch(/required in production mode/);
    expect(() => configForRole(parseConfig(PRODUCTION_ENV), "serve")).toThrow(/METRICS_TOKEN/);
    expect(problemsOf({ ...PRODUCTION_ENV, METRICS_TOKEN: TOKEN }).map((x) => x.variable)).not.toContain(
      "METRICS_TOKEN",
    );
    expect(problemsOf({ ...PRODUCTION_ENV, METRICS_TOKEN: "short" }).map((x) => x.variable)).toContain(
      "METRICS_TOKEN",
    );
  });
});

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
/** What a same-host reverse proxy sends: the peer is loopback, the client is elsewhere. */
const proxied = { "x-forwarded-for": "203.0.113.50" };

describe("with METRICS_TOKEN set", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(() => svc?.close());

  it("/metrics needs the bearer token, whatever the peer address", async () => {
    for (const headers of [
      {},
      proxied,
      bearer("wrong"),
      bearer(`${TOKEN}x`),
      bearer(TOKEN.slice(0, -1)),
      { authorization: TOKEN },
      { authorization: `Basic ${Buffer.from(`metrics:${TOKEN}`).toString("base64")}` },
      { authorization: `bearer  ${TOKEN} extra` },
    ]) {
      for (const base of [svc.urls.production, svc.urls.sandbox]) {
        const r = await rawRequest(base, "GET", "/metrics", { headers });
        expect(r.status, JSON.stringify(headers)).toBe(404);
        expect(r.text).not.toMatch(/stablegate_/);
        expect(r.body?.error?.code).toBe("NOT_FOUND");
      }
    }
    const ok = await rawRequest(svc.urls.production, "GET", "/metrics", { headers: bearer(TOKEN) });
    expect(ok.status).toBe(200);
    expect(ok.text).toMatch(/^stablegate_http_requests_total/m);
  });

  it("/readyz tells anyone only its overall status; the detail needs the token", async () => {
    for (const headers of [{}, proxied, bearer("wrong")]) {
      const r = await rawRequest(svc.urls.production, "GET", "/readyz", { headers });
      expect([200, 503]).toContain(r.status);
      expect(Object.keys(r.body)).toEqual(["status"]);
      expect(["ok", "degraded", "unavailable"]).toContain(r.body.status);
      expect(r.text).not.toMatch(/hot wallet|lag|pending|base units|chain:/);
    }
    const full = await rawRequest(svc.urls.production, "GET", "/readyz", { headers: bearer(TOKEN) });
    expect(full.body.checks.database.status).toBe("ok");
    expect(full.body.checks["sending:USDT-ERC20:sandbox"].detail).toMatch(/hot wallet/);
    const brief = await rawRequest(svc.urls.production, "GET", "/readyz");
    // The same verdict and HTTP code as the detailed answer.
    expect(brief.body.status).toBe(full.body.status);
    expect(brief.status).toBe(full.status);
  });
});

describe("without METRICS_TOKEN (outside production mode)", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc?.close());

  it("/metrics is closed to everyone, loopback peers included", async () => {
    for (const headers of [{}, proxied, bearer(""), bearer("undefined")]) {
      const r = await rawRequest(svc.urls.production, "GET", "/metrics", { headers });
      expect(r.status, JSON.stringify(headers)).toBe(404);
      expect(r.text).not.toMatch(/stablegate_/);
    }
  });

  it("/readyz answers only its overall status", async () => {
    const r = await rawRequest(svc.urls.production, "GET", "/readyz", { headers: bearer("") });
    expect([200, 503]).toContain(r.status);
    expect(Object.keys(r.body)).toEqual(["status"]);
  });
});
