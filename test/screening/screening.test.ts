import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import { ManualClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { Registry } from "../../src/observability/metrics.js";
import {
  createScreening,
  type ScreeningDecision,
  type ScreeningOptions,
  type ScreeningQuery,
} from "../../src/screening/index.js";

/**
 * The screening client against a real HTTP server on 127.0.0.1 (docs/screening.md): what it sends,
 * what each answer decides, the error policy, the cache and the coalescing of identical checks.
 */

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

let server: Server;
let url: string;
let handler: Handler;
let received: Received[];

const json = (status: number, value: unknown): Handler => {
  return (_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(typeof value === "string" ? value : JSON.stringify(value));
  };
};
const ALLOW = json(200, { decision: "allow" });

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/screen`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function reset(h: Handler): void {
  handler = h;
  received = [];
}

/** Log lines written by the client (JSON), to look for the cause and for the token. */
function captureLogger() {
  const lines: string[] = [];
  const logger = createLogger("info", { write: (s: string) => void lines.push(s) });
  return { logger, lines };
}

const TRON: ScreeningQuery = {
  address: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
  network: "USDT-TRC20",
  direction: "incoming",
};
const EVM: ScreeningQuery = {
  address: "0x52908400098527886E0F7030069857D2E4169EE7",
  network: "USDT-ERC20",
  direction: "outgoing",
};

function screening(extra: Partial<ScreeningOptions> = {}) {
  const { logger, lines } = captureLogger();
  const s = createScreening({ url, logger, timeoutMs: 300, ...extra });
  return { s, lines };
}

describe("screening: the provider's answers", () => {
  it("allows: sends the address, network and direction as JSON with the bearer token", async () => {
    reset(ALLOW);
    const { s } = screening({ token: "screening-secret-token" });
    expect(s.enabled).toBe(true);
    expect(await s.check(TRON)).toEqual({ decision: "allow", reason: null, source: "provider" });
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(r.method).toBe("POST");
    expect(r.url).toBe("/v1/screen");
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.headers.authorization).toBe("Bearer screening-secret-token");
    expect(JSON.parse(r.body)).toEqual({
      address: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
      network: "USDT-TRC20",
      direction: "incoming",
    });
  });

  it("sends no Authorization header without a token", async () => {
    reset(ALLOW);
    const { s } = screening();
    await s.check(EVM);
    expect(received[0]!.headers.authorization).toBeUndefined();
    expect(JSON.parse(received[0]!.body)).toEqual({
      address: EVM.address,
      network: "USDT-ERC20",
      direction: "outgoing",
    });
  });

  it("denies with the provider's reason, cut to 200 characters", async () => {
    reset(json(200, { decision: "deny", reason: "sanctioned entity" }));
    const { s } = screening();
    expect(await s.check(EVM)).toEqual({ decision: "deny", reason: "sanctioned entity", source: "provider" });

    reset(json(200, { decision: "deny", reason: "x".repeat(5000) }));
    const d = await screening().s.check(EVM);
    expect(d.decision).toBe("deny");
    expect(d.reason).toBe("x".repeat(200));

    reset(json(200, { decision: "deny", reason: 42 }));
    expect(await screening().s.check(EVM)).toEqual({ decision: "deny", reason: null, source: "provider" });
  });
});

describe("screening: errors are the operator's policy", () => {
  it("a provider slower than the timeout: denied (closed, the default), without waiting for it", async () => {
    reset((_req, res) => {
      const t = setTimeout(() => ALLOW(_req, res, ""), 5000);
      res.on("close", () => clearTimeout(t));
    });
    const { s, lines } = screening({ timeoutMs: 200 });
    const started = Date.now();
    expect(await s.check(TRON)).toEqual({
      decision: "deny",
      reason: "screening unavailable: timeout after 200 ms",
      source: "policy",
    });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(lines.join("")).toContain("timeout after 200 ms");
  });

  it("a provider slower than the timeout: allowed with SCREENING_ON_ERROR=open", async () => {
    reset((_req, res) => {
      const t = setTimeout(() => ALLOW(_req, res, ""), 5000);
      res.on("close", () => clearTimeout(t));
    });
    const { s } = screening({ timeoutMs: 200, onError: "open" });
    expect(await s.check(TRON)).toEqual({
      decision: "allow",
      reason: "screening unavailable: timeout after 200 ms (fail open)",
      source: "policy",
    });
  });

  it("a body that trickles past the timeout is a timeout too", async () => {
    reset((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"decision":');
      const t = setTimeout(() => res.end('"allow"}'), 5000);
      res.on("close", () => clearTimeout(t));
    });
    const d = await screening({ timeoutMs: 200 }).s.check(TRON);
    expect(d).toEqual({
      decision: "deny",
      reason: "screening unavailable: timeout after 200 ms",
      source: "policy",
    });
  });

  it("a 500: denied when closed, allowed when open; logged at warn with the cause, never the token", async () => {
    reset(json(500, { error: "boom" }));
    const closed = screening({ token: "screening-secret-token" });
    expect(await closed.s.check(EVM)).toEqual({
      decision: "deny",
      reason: "screening unavailable: HTTP 500",
      source: "policy",
    });
    const open = screening({ token: "screening-secret-token", onError: "open" });
    expect(await open.s.check(EVM)).toEqual({
      decision: "allow",
      reason: "screening unavailable: HTTP 500 (fail open)",
      source: "policy",
    });
    expect(received).toHaveLength(2);
    for (const lines of [closed.lines, open.lines]) {
      expect(lines).toHaveLength(1);
      const line = JSON.parse(lines[0]!);
      expect(line.level).toBe(40); // warn
      expect(line.cause).toBe("HTTP 500");
      expect(line.alert).toBe("screening_unavailable");
      expect(line.screening).toEqual({ network: "USDT-ERC20", direction: "outgoing", address: EVM.address });
      expect(lines[0]).not.toContain("screening-secret-token");
    }
    expect(JSON.parse(open.lines[0]!).policy).toBe("open");
  });

  it("other statuses, bad JSON, unknown decisions and oversized answers are errors", async () => {
    const cases: [Handler, string][] = [
      [json(404, "not here"), "HTTP 404"],
      [json(302, ""), "HTTP 302"],
      [json(200, "{not json"), "invalid JSON"],
      [json(200, "[1,2]"), "answer is not a JSON object"],
      [json(200, { decision: "maybe" }), 'unknown decision "maybe"'],
      [json(200, { reason: "no decision" }), "unknown decision null"],
      [json(200, { decision: "deny", reason: "y".repeat(70 * 1024) }), "answer larger than 65536 bytes"],
    ];
    for (const [h, what] of cases) {
      reset(h);
      expect(await screening().s.check(TRON), what).toEqual({
        decision: "deny",
        reason: `screening unavailable: ${what}`,
        source: "policy",
      });
    }
  });

  it("a connection the provider drops before answering is tried once more, then an error", async () => {
    let calls = 0;
    reset((req, res, body) => {
      calls++;
      if (calls === 1) req.socket.destroy();
      else ALLOW(req, res, body);
    });
    expect(await screening().s.check(TRON)).toEqual({ decision: "allow", reason: null, source: "provider" });
    expect(received).toHaveLength(2);

    reset((req) => req.socket.destroy());
    expect(await screening().s.check(TRON)).toEqual({
      decision: "deny",
      reason: "screening unavailable: connection error: UND_ERR_SOCKET",
      source: "policy",
    });
    expect(received).toHaveLength(2);
  });

  it("an unreachable provider is a connection error", async () => {
    const closedPort = createServer();
    await new Promise<void>((r) => closedPort.listen(0, "127.0.0.1", r));
    const port = (closedPort.address() as AddressInfo).port;
    await new Promise<void>((r) => closedPort.close(() => r()));
    const { logger } = captureLogger();
    const s = createScreening({ url: `http://127.0.0.1:${port}/`, logger, timeoutMs: 1000 });
    expect(await s.check(TRON)).toEqual({
      decision: "deny",
      reason: "screening unavailable: connection error: ECONNREFUSED",
      source: "policy",
    });
  });
});

describe("screening: cache and coalescing", () => {
  it("answers a repeated check from the cache (allow and deny), per network, direction and address", async () => {
    reset((_req, res, body) => {
      const q = JSON.parse(body) as ScreeningQuery;
      json(200, q.address === EVM.address ? { decision: "deny", reason: "mixer" } : { decision: "allow" })(
        _req,
        res,
        body,
      );
    });
    const { s } = screening();
    expect(await s.check(TRON)).toEqual({ decision: "allow", reason: null, source: "provider" });
    expect(await s.check(TRON)).toEqual({ decision: "allow", reason: null, source: "cache" });
    expect(await s.check(EVM)).toEqual({ decision: "deny", reason: "mixer", source: "provider" });
    expect(await s.check(EVM)).toEqual({ decision: "deny", reason: "mixer", source: "cache" });
    expect(received).toHaveLength(2);
    // Another direction, network or spelling of the address is another question.
    await s.check({ ...TRON, direction: "outgoing" });
    await s.check({ ...EVM, network: "USDC-ERC20" });
    await s.check({ ...EVM, address: EVM.address.toLowerCase() });
    expect(received).toHaveLength(5);
  });

  it("keeps an answer for SCREENING_CACHE_SECONDS on the injected clock", async () => {
    reset(ALLOW);
    const clock = new ManualClock();
    const { s } = screening({ clock, cacheSeconds: 60 });
    await s.check(TRON);
    clock.advance(59_999);
    expect((await s.check(TRON)).source).toBe("cache");
    expect(received).toHaveLength(1);
    clock.advance(1);
    expect((await s.check(TRON)).source).toBe("provider");
    expect(received).toHaveLength(2);
    expect((await s.check(TRON)).source).toBe("cache");
  });

  it("the default period is an hour; 0 disables the cache", async () => {
    reset(ALLOW);
    const clock = new ManualClock();
    const hour = screening({ clock });
    await hour.s.check(TRON);
    clock.advance(3_599_999);
    expect((await hour.s.check(TRON)).source).toBe("cache");
    clock.advance(1);
    expect((await hour.s.check(TRON)).source).toBe("provider");

    reset(ALLOW);
    const none = screening({ clock, cacheSeconds: 0 });
    await none.s.check(TRON);
    expect((await none.s.check(TRON)).source).toBe("provider");
    expect(received).toHaveLength(2);
  });

  it("never caches an error", async () => {
    let calls = 0;
    reset((req, res, body) => {
      calls++;
      (calls === 1 ? json(503, "busy") : ALLOW)(req, res, body);
    });
    const { s } = screening();
    expect((await s.check(TRON)).source).toBe("policy");
    expect(await s.check(TRON)).toEqual({ decision: "allow", reason: null, source: "provider" });
    expect((await s.check(TRON)).source).toBe("cache");
    expect(received).toHaveLength(2);
  });

  it("is bounded: past the limit the oldest answer goes", async () => {
    reset(ALLOW);
    const { s } = screening({ maxCacheEntries: 2 });
    const q = (n: number): ScreeningQuery => ({ ...TRON, address: `T${n}` });
    await s.check(q(1));
    await s.check(q(2));
    await s.check(q(3)); // evicts 1
    expect(received).toHaveLength(3);
    expect((await s.check(q(3))).source).toBe("cache");
    expect((await s.check(q(2))).source).toBe("cache");
    expect((await s.check(q(1))).source).toBe("provider");
    expect(received).toHaveLength(4);
  });

  it("concurrent identical checks share one request", async () => {
    reset((req, res, body) => {
      setTimeout(() => json(200, { decision: "deny", reason: "listed" })(req, res, body), 100);
    });
    const { s } = screening({ timeoutMs: 2000, cacheSeconds: 0 });
    const decisions = await Promise.all([s.check(TRON), s.check(TRON), s.check(TRON), s.check(EVM)]);
    expect(received).toHaveLength(2); // one for TRON, one for EVM
    for (const d of decisions) expect(d).toEqual({ decision: "deny", reason: "listed", source: "provider" });
    // Once answered (and with no cache), the next check asks again.
    await s.check(TRON);
    expect(received).toHaveLength(3);
  });

  it("concurrent identical checks share one failure, logged once", async () => {
    reset((req, res, body) => {
      setTimeout(() => json(500, "")(req, res, body), 50);
    });
    const { s, lines } = screening({ timeoutMs: 2000 });
    const decisions = await Promise.all([s.check(TRON), s.check(TRON), s.check(TRON)]);
    expect(received).toHaveLength(1);
    expect(lines).toHaveLength(1);
    for (const d of decisions) expect(d.source).toBe("policy");
  });
});

describe("screening: off and counted", () => {
  it("without SCREENING_URL: disabled, every check allowed, nothing asked", async () => {
    reset(ALLOW);
    const { logger } = captureLogger();
    const s = createScreening({ url: undefined, logger });
    expect(s.enabled).toBe(false);
    expect(await s.check(TRON)).toEqual({ decision: "allow", reason: null, source: "off" });
    expect(await s.check(EVM)).toEqual({ decision: "allow", reason: null, source: "off" });
    expect(received).toHaveLength(0);
  });

  it("counts stablegate_screening_decisions_total by direction, decision and source", async () => {
    reset(json(200, { decision: "deny", reason: "listed" }));
    const registry = new Registry();
    const { s } = screening({ registry });
    await s.check(EVM);
    await s.check(EVM);
    // A second client on the same registry shares the counter.
    const { logger } = captureLogger();
    const off = createScreening({ url: undefined, logger, registry });
    await off.check(TRON);
    const text = await registry.metrics();
    expect(text).toContain(
      'stablegate_screening_decisions_total{direction="outgoing",decision="deny",source="provider"} 1',
    );
    expect(text).toContain(
      'stablegate_screening_decisions_total{direction="outgoing",decision="deny",source="cache"} 1',
    );
    expect(text).toContain(
      'stablegate_screening_decisions_total{direction="incoming",decision="allow",source="off"} 1',
    );
  });
});

describe("screening: configuration", () => {
  function problemsOf(env: Record<string, string>): { variable: string; message: string }[] {
    try {
      parseConfig(env);
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    throw new Error("expected a ConfigError");
  }

  it("is off by default, with the documented defaults", () => {
    expect(parseConfig({}).screening).toEqual({
      url: undefined,
      token: undefined,
      timeoutMs: 3000,
      onError: "closed",
      cacheSeconds: 3600,
    });
    expect(parseConfig({ SCREENING_URL: "" }).screening.url).toBeUndefined();
  });

  it("reads SCREENING_URL, _TOKEN, _TIMEOUT_MS, _ON_ERROR and _CACHE_SECONDS", () => {
    const c = parseConfig({
      SCREENING_URL: "https://screening.example.com/v1/check",
      SCREENING_TOKEN: "tok-123",
      SCREENING_TIMEOUT_MS: "1500",
      SCREENING_ON_ERROR: "open",
      SCREENING_CACHE_SECONDS: "0",
    });
    expect(c.screening).toEqual({
      url: "https://screening.example.com/v1/check",
      token: "tok-123",
      timeoutMs: 1500,
      onError: "open",
      cacheSeconds: 0,
    });
    expect(parseConfig({ SCREENING_URL: "http://10.0.0.7:9000/" }).screening.url).toBe(
      "http://10.0.0.7:9000/",
    );
  });

  it("names each bad variable", () => {
    expect(problemsOf({ SCREENING_URL: "not a url" }).map((p) => p.variable)).toEqual(["SCREENING_URL"]);
    expect(problemsOf({ SCREENING_URL: "ftp://screening.example.com/" })).toEqual([
      { variable: "SCREENING_URL", message: "must be an http or https URL" },
    ]);
    expect(problemsOf({ SCREENING_TIMEOUT_MS: "0" })[0]?.variable).toBe("SCREENING_TIMEOUT_MS");
    expect(problemsOf({ SCREENING_TIMEOUT_MS: "soon" })[0]?.variable).toBe("SCREENING_TIMEOUT_MS");
    expect(problemsOf({ SCREENING_ON_ERROR: "maybe" })[0]?.variable).toBe("SCREENING_ON_ERROR");
    expect(problemsOf({ SCREENING_CACHE_SECONDS: "-1" })[0]?.variable).toBe("SCREENING_CACHE_SECONDS");
    expect(problemsOf({ SCREENING_CACHE_SECONDS: "1.5" })[0]?.variable).toBe("SCREENING_CACHE_SECONDS");
  });

  it("config.screening is what createScreening takes, and its token is redacted from logs", async () => {
    reset(ALLOW);
    const c = parseConfig({ SCREENING_URL: url, SCREENING_TOKEN: "from-the-environment" });
    const { logger, lines } = captureLogger();
    const s = createScreening({ ...c.screening, logger });
    await s.check(TRON);
    expect(received[0]!.headers.authorization).toBe("Bearer from-the-environment");
    logger.info({ screening: c.screening }, "configuration");
    expect(lines.join("")).not.toContain("from-the-environment");
    expect(JSON.parse(lines.at(-1)!).screening.token).toBe("[redacted]");
  });
});

describe("the provider's reason as kept (attack review, issue #40)", () => {
  it("control characters (NUL included) become spaces; cut at 200 code points, never half a pair", async () => {
    const { cleanReason } = await import("../../src/screening/provider.js");
    expect(cleanReason("bad\u0000actor")).toBe("bad actor");
    expect(cleanReason("line\r\nbreak\u001b[31m\u2028x")).toBe("line break [31m x");
    expect(cleanReason(" \n\t ")).toBeNull();
    const long = cleanReason("😀".repeat(250)) ?? "";
    expect(Array.from(long)).toHaveLength(200);
    expect(long).not.toContain("\ufffd");
    expect(long.length).toBe(400);
  });
});

describe("screening: every decision recorded (the audit log's `screening.decision`)", () => {
  it("the provider's, the cache's and the error policy's, each with its query and subject; none when off", async () => {
    const recorded: [ScreeningQuery, ScreeningDecision][] = [];
    const record = async (q: ScreeningQuery, d: ScreeningDecision) => void recorded.push([q, d]);
    const { logger } = captureLogger();
    const subject = { environment: "sandbox" as const, merchantId: "mer_1" };
    reset(json(200, { decision: "deny", reason: "listed" }));
    const s = createScreening({ url, logger, timeoutMs: 300, record });
    await s.check({ ...TRON, subject });
    await s.check({ ...TRON, subject });
    reset(json(500, "no"));
    await s.check(EVM);
    expect(recorded.map(([q, d]) => [q.address, q.subject, d.decision, d.source])).toEqual([
      [TRON.address, subject, "deny", "provider"],
      [TRON.address, subject, "deny", "cache"],
      [EVM.address, undefined, "deny", "policy"],
    ]);
    // The subject is not sent to the provider.
    reset(ALLOW);
    await createScreening({ url, logger, timeoutMs: 300, record }).check({ ...EVM, subject });
    expect(JSON.parse(received[0]?.body ?? "{}")).toEqual({
      address: EVM.address,
      network: EVM.network,
      direction: EVM.direction,
    });
    const off = createScreening({ url: undefined, logger, record });
    recorded.length = 0;
    await off.check(TRON);
    expect(recorded).toEqual([]);
  });

  it("a decision that cannot be recorded fails the check (nothing moves on an unrecorded decision)", async () => {
    reset(ALLOW);
    const { logger } = captureLogger();
    const s = createScreening({
      url,
      logger,
      timeoutMs: 300,
      record: async () => {
        throw new Error("audit log unavailable");
      },
    });
    await expect(s.check(TRON)).rejects.toThrow("audit log unavailable");
  });
});
