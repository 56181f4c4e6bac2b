import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryRateLimitStore } from "../../src/ratelimit/memory-store.js";
import { RedisRateLimitStore } from "../../src/ratelimit/redis-store.js";
import type { RateLimitStore } from "../../src/ratelimit/store.js";
import { TEST_REDIS_URL } from "../support/db.js";

/** A reference model of the sliding window log, written as plainly as possible. */
function model() {
  const log = new Map<string, number[]>();
  return (key: string, limit: number, window: number, now: number) => {
    const inWindow = (log.get(key) ?? []).filter((t) => t > now - window);
    const allowed = inWindow.length < limit;
    if (allowed) inWindow.push(now);
    log.set(key, inWindow);
    return { allowed, count: inWindow.length };
  };
}

const steps = fc.array(fc.record({ key: fc.constantFrom("a", "b"), dt: fc.integer({ min: 0, max: 400 }) }), {
  minLength: 1,
  maxLength: 60,
});

async function agreesWithModel(make: () => RateLimitStore) {
  await fc.assert(
    fc.asyncProperty(steps, async (seq) => {
      const store = make();
      const ref = model();
      let now = 1_700_000_000_000;
      try {
        for (const s of seq) {
          now += s.dt;
          const got = await store.hit(s.key, 3, 1000, now);
          const want = ref(s.key, 3, 1000, now);
          if (got.allowed !== want.allowed || got.count !== want.count) return false;
          if (got.resetMs < 0 || got.resetMs > 1000) return false;
        }
        return true;
      } finally {
        await store.close();
      }
    }),
    { numRuns: 60 },
  );
}

describe("sliding window stores agree with the reference model", () => {
  it("memory", async () => {
    await agreesWithModel(() => new MemoryRateLimitStore());
  });

  it("memory store forgets idle clients", async () => {
    const s = new MemoryRateLimitStore();
    await s.hit("x", 5, 1000, 10_000);
    await s.hit("y", 5, 1000, 10_500);
    s.sweep(11_200);
    expect(s.size).toBe(1);
    s.sweep(11_500);
    expect(s.size).toBe(0);
    await s.close();
  });

  describe.skipIf(!TEST_REDIS_URL)("redis", () => {
    const redis = TEST_REDIS_URL ? new Redis(TEST_REDIS_URL) : undefined;
    afterAll(async () => {
      await redis?.quit();
    });
    it("matches the model (Lua script)", async () => {
      await agreesWithModel(
        () => new RedisRateLimitStore(redis as Redis, `sgtest:${randomBytes(6).toString("hex")}:`),
      );
    });

    it("keeps the log until its newest entry leaves the window (the key does not expire with the oldest)", async () => {
      const prefix = `sgtest:${randomBytes(6).toString("hex")}:`;
      const store = new RedisRateLimitStore(redis as Redis, prefix);
      const t0 = 1_700_000_000_000;
      await store.hit("k", 5, 10_000, t0);
      await store.hit("k", 5, 10_000, t0 + 9_990);
      // The oldest leaves the window 10 ms (caller's clock) after the second hit; the newest stays
      // for 10 s more. The key must outlive real time accordingly.
      expect(await (redis as Redis).pttl(`${prefix}k`)).toBeGreaterThan(9_000);
      await new Promise((r) => setTimeout(r, 30)); // real time passes beyond the oldest's expiry
      const third = await store.hit("k", 5, 10_000, t0 + 10_020);
      expect(third.count).toBe(2); // the newest is still counted, the oldest is gone
    });
  });
});
