import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../src/http/app-types.js";
import { RATE_LIMIT_MESSAGE } from "../../src/http/plugins/rate-limit.js";
import { ManualClock } from "../../src/lib/clock.js";
import { openTestDatabase, TEST_REDIS_URL } from "../support/db.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

const WINDOW_MS = 900_000;
/** /readyz shows its checks only to the operator's token (docs/api-reference.md#operations). */
const METRICS_TOKEN = "metrics-token-0123456789abcdef";
const operator = { authorization: `Bearer ${METRICS_TOKEN}` };

// Stands in for the Auth-tier routes (login, register, ...) of the dashboard issue.
function authProbe(app: App) {
  app.post("/api/v1/auth/test-login", { config: { tier: "auth" } }, async () => ({
    success: true,
    data: {},
  }));
}

const services: TestService[] = [];
async function start(options: Parameters<typeof startTestService>[0] = {}) {
  const svc = await startTestService({ extraRoutes: authProbe, ...options });
  services.push(svc);
  return svc;
}
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

const login = (svc: TestService) => call(svc.urls.production, "/api/v1/auth/test-login", { json: {} });

function expectHeaders(r: { headers: Headers }, limit: number) {
  expect(r.headers.get("ratelimit-limit")).toBe(String(limit));
  expect(r.headers.get("ratelimit-remaining")).toMatch(/^\d+$/);
  expect(r.headers.get("ratelimit-reset")).toMatch(/^\d+$/);
  expect(r.headers.get("ratelimit-policy")).toBe(`${limit};w=900`);
}

describe("rate limits, in memory", () => {
  it("puts RateLimit-* headers on 200, 400, 401 and 404 responses", async () => {
    const svc = await start();
    const k = keysOf(await svc.createMerchant(), "production");
    const ok = await call(svc.urls.production, "/api/v1/public/account", { headers: { apikey: k.apiKey } });
    expect(ok.status).toBe(200);
    expectHeaders(ok, 100);
    expect(ok.headers.get("ratelimit-remaining")).toBe("99");
    const unauthorized = await call(svc.urls.production, "/api/v1/public/account");
    expect(unauthorized.status).toBe(401);
    expectHeaders(unauthorized, 100);
    expect(unauthorized.headers.get("ratelimit-remaining")).toBe("98");
    const notFound = await call(svc.urls.production, "/api/v1/nothing-here");
    expect(notFound.status).toBe(404);
    expectHeaders(notFound, 100);
    const dashboard404 = await call(svc.urls.production, "/api/v1/dashboard/nothing-here");
    expectHeaders(dashboard404, 200);
    const bad = await call(svc.urls.production, "/api/v1/auth/test-login", {
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect(bad.status).toBe(400);
    expectHeaders(bad, 15);
  });

  it("answers the 16th Auth request in the window with 429, the spec body and Retry-After", async () => {
    const clock = new ManualClock();
    const svc = await start({ clock });
    for (let i = 1; i <= 15; i++) {
      const r = await login(svc);
      expect(r.status).toBe(200);
      expect(r.headers.get("ratelimit-remaining")).toBe(String(15 - i));
      clock.advance(1_000);
    }
    const r = await login(svc);
    expect(r.status).toBe(429);
    // The contract's `{ success: false, message }` exactly, plus the `error` object every error body shares.
    expect(r.body).toEqual({
      success: false,
      message: RATE_LIMIT_MESSAGE,
      error: {
        code: "RATE_LIMITED",
        message: RATE_LIMIT_MESSAGE,
        details: {},
        requestId: expect.any(String),
      },
    });
    expect(r.body.message).toMatch(/rate limit exceeded/i);
    expectHeaders(r, 15);
    expect(r.headers.get("ratelimit-remaining")).toBe("0");
    // The oldest request (t0) leaves at t0 + 900 s; now is t0 + 15 s.
    expect(r.headers.get("retry-after")).toBe("885");
    expect(r.headers.get("ratelimit-reset")).toBe("885");
    // Other tiers are counted separately.
    expect((await call(svc.urls.production, "/healthz")).status).toBe(200);
    expect((await call(svc.urls.production, "/api/v1/public/account")).status).toBe(401);
  });

  it("slides: a request is allowed again exactly when the oldest one leaves the window", async () => {
    const clock = new ManualClock();
    const svc = await start({ clock });
    const t0 = clock.now();
    for (let i = 0; i < 15; i++) {
      expect((await login(svc)).status).toBe(200);
      clock.advance(10_000); // requests at t0, t0+10 s, ..., t0+140 s
    }
    clock.set(t0 + WINDOW_MS - 1);
    expect((await login(svc)).status).toBe(429);
    clock.set(t0 + WINDOW_MS);
    const again = await login(svc);
    expect(again.status).toBe(200); // the t0 request has left; this one takes its slot
    expect(again.headers.get("ratelimit-remaining")).toBe("0");
    expect((await login(svc)).status).toBe(429); // t0+10 s is still inside
    clock.set(t0 + 10_000 + WINDOW_MS);
    expect((await login(svc)).status).toBe(200);
  });

  it("keeps limiting per instance when Redis is unreachable, and /readyz says so", async () => {
    const svc = await start({ env: { REDIS_URL: "redis://127.0.0.1:1", METRICS_TOKEN } });
    for (let i = 0; i < 15; i++) expect((await login(svc)).status).toBe(200);
    expect((await login(svc)).status).toBe(429);
    const ready = await call(svc.urls.production, "/readyz", { headers: operator });
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe("degraded");
    expect(ready.body.checks.rateLimitStore.status).toBe("degraded");
    expect(ready.body.checks.rateLimitStore.detail).toMatch(/redis unreachable/);
  });

  it("honours configured limits", async () => {
    const svc = await start({ env: { RATE_LIMIT_AUTH: "2", RATE_LIMIT_WINDOW_SECONDS: "60" } });
    expect((await login(svc)).headers.get("ratelimit-policy")).toBe("2;w=60");
    expect((await login(svc)).status).toBe(200);
    expect((await login(svc)).status).toBe(429);
  });

  it("counts a request with the key pair per key as well as per address; the key alone or a wrong secret costs the key nothing", async () => {
    // TRUST_PROXY=1: X-Forwarded-For names the client, so one key can come from several addresses.
    const svc = await start({ env: { RATE_LIMIT_STANDARD: "3", TRUST_PROXY: "1" } });
    const k = keysOf(await svc.createMerchant(), "sandbox");
    const other = keysOf(await svc.createMerchant(), "sandbox");
    const from = (ip: string, pair = k) =>
      call(svc.urls.sandbox, "/api/v1/public/account", {
        headers: { apikey: pair.apiKey, "x-api-secret": pair.apiSecret, "x-forwarded-for": ip },
      });
    // Guesses with the victim's key and a wrong secret fail authentication: the key is not counted.
    for (let i = 0; i < 3; i++) {
      const guess = await call(svc.urls.sandbox, "/api/v1/public/account", {
        headers: { apikey: k.apiKey, "x-api-secret": "sk_test_wrong", "x-forwarded-for": "198.51.100.66" },
      });
      expect(guess.status).toBe(401);
    }
    // The apikey alone (public enough to sit in a front-end) authorizes this read, from anywhere:
    // counted per address only, never against the key's budget.
    for (let i = 0; i < 3; i++) {
      const keyOnly = await call(svc.urls.sandbox, "/api/v1/public/account", {
        headers: { apikey: k.apiKey, "x-forwarded-for": "198.51.100.77" },
      });
      expect(keyOnly.status).toBe(200);
    }
    // Three addresses, one key: three requests pass, the fourth (a fresh address) is refused.
    expect((await from("203.0.113.1")).status).toBe(200);
    expect((await from("203.0.113.2")).status).toBe(200);
    const third = await from("203.0.113.3");
    expect(third.status).toBe(200);
    expect(third.headers.get("ratelimit-remaining")).toBe("0"); // the tighter count: the key's
    const fourth = await from("203.0.113.4");
    expect(fourth.status).toBe(429);
    expect(fourth.body.error).toMatchObject({ code: "RATE_LIMITED", details: { scope: "apiKey" } });
    expect(Number(fourth.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Another merchant's key from one of those addresses has its own count.
    expect((await from("203.0.113.4", other)).status).toBe(200);
  });
});

describe.skipIf(!TEST_REDIS_URL)("rate limits on Redis", () => {
  let prefix: string;
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL as string);
  });
  afterAll(async () => {
    await redis.quit();
  });
  const env = () => {
    prefix = `sgtest:${randomBytes(4).toString("hex")}:`;
    return { REDIS_URL: TEST_REDIS_URL as string, REDIS_KEY_PREFIX: prefix };
  };

  it("slides exactly, atomically in Redis", async () => {
    const clock = new ManualClock();
    const svc = await start({ clock, env: { ...env(), METRICS_TOKEN } });
    const t0 = clock.now();
    for (let i = 0; i < 15; i++) {
      expect((await login(svc)).status).toBe(200);
      clock.advance(10_000);
    }
    clock.set(t0 + WINDOW_MS - 1);
    const denied = await login(svc);
    expect(denied.status).toBe(429);
    expect(denied.headers.get("retry-after")).toBe("1");
    clock.set(t0 + WINDOW_MS);
    expect((await login(svc)).status).toBe(200);
    expect((await login(svc)).status).toBe(429);
    expect(await redis.zcard(`${prefix}rl:auth:127.0.0.1`)).toBe(15);
    const ready = await call(svc.urls.production, "/readyz", { headers: operator });
    expect(ready.body.checks.rateLimitStore).toEqual({ status: "ok", detail: "redis" });
  });

  it("shares one count between two app instances on one Redis and one database", async () => {
    const shared = await openTestDatabase();
    try {
      const clock = new ManualClock();
      const e = env();
      const a = await start({ clock, env: e, database: shared });
      const b = await start({ clock, env: e, database: shared });
      for (let i = 0; i < 15; i++) {
        const r = await login(i % 2 === 0 ? a : b);
        expect(r.status).toBe(200);
        expect(r.headers.get("ratelimit-remaining")).toBe(String(14 - i));
      }
      expect((await login(a)).status).toBe(429);
      expect((await login(b)).status).toBe(429);
      // Concurrent bursts across both instances never let more than the limit through.
      clock.advance(WINDOW_MS);
      const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => login(i % 2 ? a : b)));
      expect(burst.filter((r) => r.status === 200)).toHaveLength(15);
      expect(burst.filter((r) => r.status === 429)).toHaveLength(25);
    } finally {
      await Promise.all(services.splice(0).map((s) => s.close()));
      await shared.close();
    }
  });
});
