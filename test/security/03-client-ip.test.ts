import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { TEST_REDIS_URL } from "../support/db.js";
import { keysOf, startTestService, type TestService } from "../support/harness.js";
import { rawRequest } from "./support.js";

// Finding 3 (issue #18): TRUST_PROXY=true made Fastify trust every hop and take the leftmost
// X-Forwarded-For entry, which the client writes itself: a forged entry passed the merchant's IP
// allowlist and a rotating one escaped every rate limit. Now (docs/decisions/security.md) TRUST_PROXY is a hop
// count (`true` = 1) or a list of proxy addresses/CIDRs, the client is the entry the trusted proxy
// appended (counted from the right), and the allowlist and the limiter use that one address.
//
// The test service is reached over 127.0.0.1: with a proxy in front, that socket address is the
// proxy's, and the X-Forwarded-For header below is what the proxy forwards ("<whatever the client
// sent>, <the client's real address>").

const ACCOUNT = "/api/v1/public/account";
const REAL = "198.51.100.9";
const FORGED = "203.0.113.7";

const services: TestService[] = [];
async function start(env: Record<string, string>) {
  const svc = await startTestService({
    env: {
      RATE_LIMIT_STANDARD: "3",
      // On PostgreSQL + Redis runs the limiter is the Redis one (its own key prefix per service).
      ...(TEST_REDIS_URL
        ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `sgtest:${randomBytes(4).toString("hex")}:` }
        : {}),
      ...env,
    },
  });
  services.push(svc);
  return svc;
}
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

async function withAllowlist(svc: TestService, list: string[]): Promise<CreatedMerchant> {
  const m = await svc.createMerchant();
  await svc.database.db
    .updateTable("merchant_settings")
    .set({ ip_allowlist: list })
    .where("merchant_id", "=", m.id)
    .execute();
  return m;
}

function account(svc: TestService, m: CreatedMerchant, xff?: string) {
  const k = keysOf(m, "production");
  return rawRequest(svc.urls.production, "GET", ACCOUNT, {
    headers: { apikey: k.apiKey, ...(xff !== undefined ? { "x-forwarded-for": xff } : {}) },
  });
}

/** Requests with rotating forged leftmost entries and one real entry: the count must not reset. */
async function rotatingForgeries(svc: TestService, real: string | undefined, tail = "") {
  const statuses: number[] = [];
  const remaining: string[] = [];
  for (let i = 0; i < 5; i++) {
    const forged = `10.${i}.${i}.${i + 1}`;
    const xff = real === undefined ? forged : `${forged}, ${real}${tail}`;
    const r = await rawRequest(svc.urls.production, "GET", "/api/v1/public/account", {
      headers: { "x-forwarded-for": xff },
    });
    statuses.push(r.status);
    remaining.push(String(r.headers["ratelimit-remaining"]));
  }
  return { statuses, remaining };
}

describe("TRUST_PROXY as a hop count", () => {
  for (const value of ["true", "1"]) {
    it(`TRUST_PROXY=${value}: the allowlist sees the entry the proxy appended, never a forged one`, async () => {
      const svc = await start({ TRUST_PROXY: value, RATE_LIMIT_STANDARD: "100" });
      const onlyForged = await withAllowlist(svc, [FORGED]);
      // The client wrote FORGED; the proxy appended the client's real address.
      const forged = await account(svc, onlyForged, `${FORGED}, ${REAL}`);
      expect(forged.status).toBe(403);
      expect(forged.body.error.code).toBe("FORBIDDEN");
      expect((await account(svc, onlyForged, `${FORGED},${REAL}`)).status).toBe(403);
      // Two X-Forwarded-For headers are one list (Node joins them): still the last entry.
      const onlyReal = await withAllowlist(svc, [REAL]);
      expect((await account(svc, onlyReal, `${FORGED}, ${REAL}`)).status).toBe(200);
      expect((await account(svc, onlyReal, REAL)).status).toBe(200);
      expect((await account(svc, onlyForged, REAL)).status).toBe(403);
    });

    it(`TRUST_PROXY=${value}: rotating forged entries do not reset the rate-limit count`, async () => {
      const svc = await start({ TRUST_PROXY: value });
      const { statuses, remaining } = await rotatingForgeries(svc, REAL);
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      expect(remaining.slice(0, 3)).toEqual(["2", "1", "0"]);
      // Another real client (another entry appended by the proxy) has its own count.
      const other = await rawRequest(svc.urls.production, "GET", ACCOUNT, {
        headers: { "x-forwarded-for": `${REAL}, 192.0.2.44` },
      });
      expect(other.status).toBe(401);
      expect(other.headers["ratelimit-remaining"]).toBe("2");
    });
  }

  it("TRUST_PROXY=2: two proxies, the client is the second entry from the right", async () => {
    const svc = await start({ TRUST_PROXY: "2", RATE_LIMIT_STANDARD: "100" });
    const onlyReal = await withAllowlist(svc, [REAL]);
    expect((await account(svc, onlyReal, `${FORGED}, ${REAL}, 10.0.0.5`)).status).toBe(200);
    const onlyForged = await withAllowlist(svc, [FORGED]);
    expect((await account(svc, onlyForged, `${FORGED}, ${REAL}, 10.0.0.5`)).status).toBe(403);
  });
});

describe("TRUST_PROXY as a list of proxy addresses and CIDRs", () => {
  it("walks from the right over trusted proxies; the first other address is the client", async () => {
    const svc = await start({ TRUST_PROXY: "127.0.0.0/8, 10.0.0.0/8", RATE_LIMIT_STANDARD: "100" });
    const onlyReal = await withAllowlist(svc, [REAL]);
    const onlyForged = await withAllowlist(svc, [FORGED]);
    // Client wrote FORGED, an edge proxy appended REAL, an inner proxy (10.1.1.1) appended itself.
    expect((await account(svc, onlyReal, `${FORGED}, ${REAL}, 10.1.1.1`)).status).toBe(200);
    expect((await account(svc, onlyForged, `${FORGED}, ${REAL}, 10.1.1.1`)).status).toBe(403);
    // A forged entry that looks like a trusted proxy does not make the one before it the client.
    expect((await account(svc, onlyForged, `${FORGED}, 10.9.9.9, ${REAL}`)).status).toBe(403);
  });

  it("rotating forged entries do not reset the count", async () => {
    const svc = await start({ TRUST_PROXY: "127.0.0.1,10.0.0.0/8" });
    const { statuses, remaining } = await rotatingForgeries(svc, REAL, ", 10.1.1.1");
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(remaining.slice(0, 3)).toEqual(["2", "1", "0"]);
  });

  it("a peer that is not a listed proxy is the client itself (its X-Forwarded-For is ignored)", async () => {
    const svc = await start({ TRUST_PROXY: "10.0.0.0/8", RATE_LIMIT_STANDARD: "100" });
    const onlyReal = await withAllowlist(svc, [REAL]);
    expect((await account(svc, onlyReal, REAL)).status).toBe(403);
    const loopback = await withAllowlist(svc, ["127.0.0.1"]);
    expect((await account(svc, loopback, REAL)).status).toBe(200);
  });
});

describe("TRUST_PROXY unset", () => {
  it("ignores X-Forwarded-For: the socket address is the client, for the allowlist and the limiter", async () => {
    const svc = await start({});
    const onlyForged = await withAllowlist(svc, [FORGED]);
    const r = await account(svc, onlyForged, FORGED);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("FORBIDDEN");
    const loopback = await withAllowlist(svc, ["127.0.0.1"]);
    expect((await account(svc, loopback, FORGED)).status).toBe(200);

    const fresh = await start({});
    const { statuses } = await rotatingForgeries(fresh, undefined);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });
});

describe("TRUST_PROXY values", () => {
  const trustOf = (v: string) => parseConfig({ TRUST_PROXY: v }).http.trustProxy;
  const problem = (v: string) => {
    try {
      parseConfig({ TRUST_PROXY: v });
    } catch (err) {
      if (err instanceof ConfigError) return err.problems.find((p) => p.variable === "TRUST_PROXY")?.message;
      throw err;
    }
    return undefined;
  };

  it("reads a hop count, true/false and a list", () => {
    expect(parseConfig({}).http.trustProxy).toBe(false);
    expect(trustOf("false")).toBe(false);
    expect(trustOf("0")).toBe(false);
    expect(trustOf("true")).toBe(1);
    expect(trustOf("1")).toBe(1);
    expect(trustOf("3")).toBe(3);
    expect(trustOf("10.0.0.1")).toEqual(["10.0.0.1"]);
    expect(trustOf(" 10.0.0.0/8 , 2001:db8::/32,127.0.0.1 ")).toEqual([
      "10.0.0.0/8",
      "2001:db8::/32",
      "127.0.0.1",
    ]);
  });

  it("refuses anything else with a clear message", () => {
    for (const bad of [
      "maybe",
      "yes",
      "-1",
      "1.5",
      "0x1",
      "10.0.0.0/33",
      "10.0.0",
      "10.0.0.1,",
      "loopback",
      "1e3",
    ]) {
      expect(problem(bad), bad).toMatch(/hop count|address|CIDR/);
    }
  });
});
