import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientKey } from "../../src/ratelimit/client-key.js";
import { TEST_REDIS_URL } from "../support/db.js";
import { startTestService, type TestService } from "../support/harness.js";
import { rawRequest } from "./support.js";

// Finding 4 (issue #18): the limiter keyed IPv6 clients per address, and one IPv6 client usually
// holds a whole /64 — 2^64 fresh counts. Now an IPv6 client is limited per /64 and an IPv4-mapped
// address (`::ffff:a.b.c.d`, how a dual-stack socket shows an IPv4 peer) counts as the IPv4 one.

describe("the rate-limit key of a client address", () => {
  it("is the /64 for IPv6, whatever the spelling", () => {
    const k = clientKey("2001:db8:1:2:3:4:5:6");
    expect(k).toBe("2001:db8:1:2::/64");
    for (const same of [
      "2001:db8:1:2::1",
      "2001:0db8:0001:0002:ffff:ffff:ffff:ffff",
      "2001:DB8:1:2:0:0:0:0",
      "2001:db8:1:2::",
      "2001:db8:1:2:a:b:1.2.3.4",
      "2001:db8:1:2::1%eth0",
    ]) {
      expect(clientKey(same), same).toBe(k);
    }
    for (const other of ["2001:db8:1:3::1", "2001:db8:2:2::1", "2001:db9:1:2::1", "::1", "fd00::2"]) {
      expect(clientKey(other), other).not.toBe(k);
    }
    expect(clientKey("::1")).toBe("0:0:0:0::/64");
    expect(clientKey("::2")).toBe(clientKey("::1"));
    expect(clientKey("fe80::1")).toBe("fe80:0:0:0::/64");
  });

  it("is the IPv4 address itself, also when it arrives IPv4-mapped", () => {
    expect(clientKey("192.0.2.1")).toBe("192.0.2.1");
    expect(clientKey("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(clientKey("::FFFF:192.0.2.1")).toBe("192.0.2.1");
    expect(clientKey("::ffff:c000:201")).toBe("192.0.2.1");
    expect(clientKey("192.0.2.2")).not.toBe(clientKey("192.0.2.1"));
  });

  it("keeps anything that is not an address apart from every address", () => {
    expect(clientKey("")).toBe("unknown:");
    expect(clientKey("not-an-ip")).toBe("unknown:not-an-ip");
  });
});

describe("a real request over IPv6", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({
      env: {
        HOST: "::",
        RATE_LIMIT_STANDARD: "10",
        ...(TEST_REDIS_URL
          ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `sgtest:${randomBytes(4).toString("hex")}:` }
          : {}),
      },
    });
  });
  afterAll(() => svc?.close());

  const port = () => new URL(svc.urls.production).port;
  const over = (host: string) =>
    rawRequest(
      `http://${host.includes(":") ? `[${host}]` : host}:${port()}`,
      "GET",
      "/api/v1/public/account",
    );

  it("counts a client in the /64 of others already counted; another /64 has its own count", async () => {
    const store = svc.proc.runtime.rateLimitStore;
    const now = Date.now();
    // Three requests from other addresses of ::1's /64 (this machine has one address there).
    for (const neighbour of ["::2", "::abcd:1", "::1:0:0:3"]) {
      await store.hit(`standard:${clientKey(neighbour)}`, 10, 900_000, now);
    }
    const r = await over("::1");
    expect(r.status).toBe(401);
    // 3 neighbours + this request.
    expect(r.headers["ratelimit-remaining"]).toBe("6");
    expect((await over("::1")).headers["ratelimit-remaining"]).toBe("5");
  });

  it("an IPv4 client reaching the dual-stack listener is counted by its IPv4 address", async () => {
    const store = svc.proc.runtime.rateLimitStore;
    await store.hit(`standard:${clientKey("127.0.0.1")}`, 10, 900_000, Date.now());
    const r = await over("127.0.0.1");
    expect(r.status).toBe(401);
    expect(r.headers["ratelimit-remaining"]).toBe("8");
  });

  it("a client in another /64 is not counted with ::1's", async () => {
    const others = (await import("node:os")).networkInterfaces();
    const global6 = Object.values(others)
      .flat()
      .find((a) => a?.family === "IPv6" && !a.internal && !a.address.startsWith("fe80"));
    if (!global6) {
      // No second IPv6 /64 on this machine: the key function above is the check.
      expect(clientKey("fd00::2")).not.toBe(clientKey("::1"));
      return;
    }
    const r = await over(global6.address);
    expect(r.status).toBe(401);
    expect(r.headers["ratelimit-remaining"]).toBe("9");
  });
});
