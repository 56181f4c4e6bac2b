import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";

const METRICS_TOKEN = "metrics-token-0123456789";
/** The checks of /readyz and /metrics are the operator's (docs/api-reference.md#operations; test/security/09-...). */
const operator = { authorization: `Bearer ${METRICS_TOKEN}` };

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ env: { DOCS_USER: "docs", DOCS_PASSWORD: "s3cret-docs", METRICS_TOKEN } });
});
afterAll(() => svc?.close());

describe("health, readiness, metrics", () => {
  it("/healthz and /readyz report the database, the rate-limit store, the worker, each chain and its sending side", async () => {
    expect((await call(svc.urls.production, "/healthz")).body).toEqual({ status: "ok" });
    // The in-process worker writes its heartbeat on start.
    let ready = await call(svc.urls.production, "/readyz", { headers: operator });
    const settled = (b: any) =>
      b.checks.workers.status === "ok" &&
      b.checks["chain:USDT-ERC20:sandbox"]?.status === "ok" &&
      b.checks["chain:USDT-TRC20:sandbox"]?.status === "ok";
    for (let i = 0; i < 100 && !settled(ready.body); i++) {
      await new Promise((r) => setTimeout(r, 20));
      ready = await call(svc.urls.production, "/readyz", { headers: operator });
    }
    // Production chains have no RPC configured in tests: reported as down (docs/chains.md#chain-registry-runtimechains), which
    // degrades readiness without taking the instance out of rotation (200).
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: "degraded",
      checks: {
        "chain:USDT-ERC20:production": { status: "down", detail: "not configured (set ERC20_RPC_URL)" },
        "chain:USDT-TRC20:production": { status: "down", detail: "not configured (set TRC20_API_URL)" },
        "chain:USDT-ERC20:sandbox": {
          status: "ok",
          detail: expect.stringMatching(
            /^head \d+, cursor \d+, lag \d+ blocks \(simulator, 1 confirmation\)$/,
          ),
        },
        "chain:USDT-TRC20:sandbox": {
          status: "ok",
          detail: expect.stringMatching(
            /^head \d+, cursor \d+, lag \d+ blocks \(simulator, 1 confirmation\)$/,
          ),
        },
        // Sending (chains part 2): the sandbox simulator's hot wallet and queue; no gas tank there.
        "sending:USDT-ERC20:sandbox": {
          status: "ok",
          detail: expect.stringMatching(
            /^hot wallet (not seen yet|\d+ base units), 0 open transfers, 0 pending sweeps$/,
          ),
        },
        "sending:USDT-TRC20:sandbox": {
          status: "ok",
          detail: expect.stringMatching(
            /^hot wallet (not seen yet|\d+ base units), 0 open transfers, 0 pending sweeps$/,
          ),
        },
        database: { status: "ok", detail: expect.stringMatching(/^(pglite|postgres)$/) },
        rateLimitStore: { status: "ok", detail: "memory (single instance)" },
        workers: { status: "ok", detail: "1 live" },
        webhooks: { status: "ok", detail: expect.stringMatching(/^\d+ pending, \d+ due, oldest due \d+ s$/) },
      },
    });
    expect(ready.headers.get("ratelimit-limit")).toBeNull(); // probes are never rate limited
  });

  it("/readyz tells a caller without the token only the overall status", async () => {
    const r = await call(svc.urls.production, "/readyz");
    expect(r.body).toEqual({ status: "degraded" });
    expect(r.status).toBe(200);
  });

  it("/metrics counts requests per route template and status (for the token holder)", async () => {
    await call(svc.urls.sandbox, "/api/v1/public/account");
    const r = await call(svc.urls.production, "/metrics", { headers: operator });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/text\/plain/);
    expect(r.text).toMatch(
      /stablegate_http_requests_total\{method="GET",route="\/api\/v1\/public\/account",status_code="401"\} 1/,
    );
    expect(r.text).toMatch(
      /stablegate_http_request_duration_seconds_bucket\{.*route="\/api\/v1\/public\/account"/,
    );
    // The webhook queue, read from the database at scrape time (test/webhooks/status.test.ts).
    expect(r.text).toMatch(/^stablegate_webhook_events_pending \d+$/m);
    expect(r.text).toMatch(/^stablegate_webhook_oldest_due_seconds [\d.e+-]+$/m);
  });
});

describe("metrics behind a token", () => {
  it("requires the bearer token", async () => {
    const s = await startTestService({ env: { METRICS_TOKEN } });
    try {
      expect((await call(s.urls.production, "/metrics")).status).toBe(404);
      expect(
        (await call(s.urls.production, "/metrics", { headers: { authorization: "Bearer wrong" } })).status,
      ).toBe(404);
      const ok = await call(s.urls.production, "/metrics", {
        headers: operator,
      });
      expect(ok.status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe("OpenAPI document", () => {
  it("is behind basic auth", async () => {
    const none = await call(svc.urls.production, "/docs/openapi.json");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Basic/);
    const wrong = await call(svc.urls.production, "/docs/openapi.json", {
      headers: { authorization: `Basic ${Buffer.from("docs:nope").toString("base64")}` },
    });
    expect(wrong.status).toBe(401);
  });

  it("is OpenAPI 3.1, generated from the route schemas: every public route declares its responses", async () => {
    const r = await call(svc.urls.production, "/docs/openapi.json", {
      headers: { authorization: `Basic ${Buffer.from("docs:s3cret-docs").toString("base64")}` },
    });
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe("3.1.0");
    const paths = r.body.paths as Record<string, Record<string, { responses?: Record<string, unknown> }>>;
    expect(Object.keys(paths)).toContain("/api/v1/public/account");
    expect(Object.keys(paths).some((p) => p.includes("refund"))).toBe(false); // disabled routes are hidden
    for (const [path, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        // A 2xx with a body schema (creating routes answer 201).
        const success = Object.entries(op.responses ?? {}).find(([code]) => /^2\d\d$/.test(code));
        // A browser form post answered only by a redirect (the payment link's page, POST /l/{id}: 303).
        if (!success && op.responses?.["303"]) continue;
        expect(
          (success?.[1] as { content?: unknown } | undefined)?.content,
          `${method.toUpperCase()} ${path} has a 2xx schema`,
        ).toBeDefined();
      }
    }
    expect(paths["/api/v1/public/account"]?.get?.responses?.["401"]).toBeDefined();
  });

  it("answers 404 when no docs credentials are configured", async () => {
    const s = await startTestService();
    try {
      expect((await call(s.urls.production, "/docs/openapi.json")).status).toBe(404);
    } finally {
      await s.close();
    }
  });
});
