import { randomBytes } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import fc from "fast-check";
import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { FallbackRateLimitStore } from "../../src/ratelimit/fallback-store.js";
import { RedisRateLimitStore, SLIDING_WINDOW_SHA } from "../../src/ratelimit/redis-store.js";
import type { RateLimitHit, RateLimitResult } from "../../src/ratelimit/store.js";
import { TEST_REDIS_URL } from "../support/db.js";

/**
 * The batched path of the Redis limiter: concurrent hits share one script call (the fallback
 * store's coalescer) and stay exact. Runs against a real Redis: TEST_REDIS_URL, else the local
 * one at 127.0.0.1:6379; skipped only when neither answers.
 */
const REDIS_URL = TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

async function reachable(url: string): Promise<boolean> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on("error", () => {});
  try {
    await r.connect();
    return (await r.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

const silent = pino({ level: "silent" });
const WINDOW = 900_000;
const T0 = 1_700_000_000_000;
const prefix = () => `sgtest:${randomBytes(6).toString("hex")}:`;

/** The Redis store, recording the size of every script call it makes. */
class RecordingRedisStore extends RedisRateLimitStore {
  readonly calls: number[] = [];
  override hitMany(hits: readonly RateLimitHit[]): Promise<RateLimitResult[]> {
    this.calls.push(hits.length);
    return super.hitMany(hits);
  }
}

/** A connection like the service's own (src/runtime.ts): fail fast, auto-pipelined. */
function serviceLikeClient(url: string): Redis {
  const r = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    enableAutoPipelining: true,
  });
  r.on("error", () => {});
  return r;
}

/** A sliding window log written as plainly as possible (as in stores.test.ts). */
function model() {
  const log = new Map<string, number[]>();
  return (h: RateLimitHit) => {
    const inWindow = (log.get(h.key) ?? []).filter((t) => t > h.now - h.windowMs);
    const allowed = inWindow.length < h.limit;
    if (allowed) inWindow.push(h.now);
    log.set(h.key, inWindow);
    return {
      allowed,
      count: inWindow.length,
      // Until the oldest leaves (the smallest time: a clock that stepped back appends older ones).
      resetMs: Math.max(0, (inWindow.length > 0 ? Math.min(...inWindow) : h.now) + h.windowMs - h.now),
    };
  };
}

/**
 * A TCP proxy in front of Redis that the test can stall (bytes from the client are held, then
 * delivered in order on `resume`) or cut (every connection dropped, new ones refused).
 */
async function startProxy(target: URL) {
  let stalled = false;
  const held: { upstream: Socket; data: Buffer }[] = [];
  const sockets = new Set<Socket>();
  let received = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.on("data", (data) => {
      received += data.length;
      if (stalled) held.push({ upstream, data });
      else upstream.write(data);
    });
    upstream.on("data", (data) => client.write(data));
    for (const s of [client, upstream]) {
      s.on("error", () => {});
      s.on("close", () => {
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    /** Bytes received from clients so far. */
    get received() {
      return received;
    },
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const h of held.splice(0)) h.upstream.write(h.data);
    },
    async cut() {
      const closed = new Promise((r) => server.close(r));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

const redisUp = await reachable(REDIS_URL);

describe.skipIf(!redisUp)(`batched Redis rate limiting (${REDIS_URL})`, () => {
  const clients: Redis[] = [];
  /** A connected client (the service waits for its connection too: commands fail fast without one). */
  const client = async (url = REDIS_URL) => {
    const r = serviceLikeClient(url);
    clients.push(r);
    if (r.status !== "ready") await new Promise((resolve) => r.once("ready", resolve));
    return r;
  };
  afterAll(() => {
    for (const r of clients) r.disconnect();
  });

  it("one script call applies its hits in order exactly as one call each would (any split into calls)", async () => {
    const redis = await client();
    const step = fc.record({
      key: fc.constantFrom("a", "b", "c"),
      limit: fc.constantFrom(1, 3),
      dt: fc.integer({ min: -30, max: 400 }), // now and then the clock steps back a little
      cut: fc.boolean(), // ends the current call after this hit
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const store = new RedisRateLimitStore(redis, prefix());
        const ref = model();
        // Consecutive hits in one call, a new call after every `cut`.
        const grouped: RateLimitHit[][] = [[]];
        let now = T0;
        for (const s of steps) {
          now += s.dt;
          (grouped.at(-1) as RateLimitHit[]).push({ key: s.key, limit: s.limit, windowMs: 1_000, now });
          if (s.cut) grouped.push([]);
        }
        for (const hits of grouped.filter((g) => g.length > 0)) {
          const got = await store.hitMany(hits);
          for (let i = 0; i < hits.length; i++) {
            const want = ref(hits[i] as RateLimitHit);
            const g = got[i] as RateLimitResult;
            if (g.allowed !== want.allowed || g.count !== want.count || g.resetMs !== want.resetMs)
              return false;
          }
        }
        return true;
      }),
      { numRuns: 100 },
    );
  });

  it("the key lives until its newest entry leaves the window, from the last added hit of the call", async () => {
    const redis = await client();
    const p = prefix();
    const store = new RedisRateLimitStore(redis, p);
    // The clock steps back within the call: the last added hit (T0) is older than the newest (T0 + 100).
    await store.hitMany([
      { key: "k", limit: 2, windowMs: 10_000, now: T0 + 100 },
      { key: "k", limit: 2, windowMs: 10_000, now: T0 },
      { key: "k", limit: 2, windowMs: 10_000, now: T0 + 50 }, // refused: the expiry stays
    ]);
    const ttl = await redis.pttl(`${p}k`);
    expect(ttl).toBeGreaterThan(10_050); // newest + window − now + 1 = 10,101 ms, minus the time passed
    expect(ttl).toBeLessThanOrEqual(10_101);
  });

  it("many hits in one tick, through two instances' stores on one Redis: exactly `limit` allowed, in shared calls", async () => {
    const p = prefix();
    // Two processes' worth: each its own connection and its own stores.
    const primaries = [
      new RecordingRedisStore(await client(), p),
      new RecordingRedisStore(await client(), p),
    ];
    const stores = primaries.map((r) => new FallbackRateLimitStore(r, silent));
    const limit = 25;
    // 120 hits on one key and 40 on another (another tier), all submitted in the same tick.
    const pending = Array.from({ length: 160 }, (_, i) =>
      (stores[i % 2] as FallbackRateLimitStore).hit(
        i < 120 ? "standard:203.0.113.7" : "auth:203.0.113.7",
        i < 120 ? limit : 5,
        WINDOW,
        T0 + Math.floor(i / 10),
      ),
    );
    const results = await Promise.all(pending);
    const main = results.slice(0, 120);
    const other = results.slice(120);
    expect(main.filter((r) => r.allowed)).toHaveLength(limit);
    expect(other.filter((r) => r.allowed)).toHaveLength(5);
    // Each allowed hit saw its own place in the shared log: counts 1..limit, once each.
    expect(
      main
        .filter((r) => r.allowed)
        .map((r) => r.count)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: limit }, (_, i) => i + 1));
    expect(main.filter((r) => !r.allowed).every((r) => r.count === limit)).toBe(true);
    const redis = clients[0] as Redis;
    expect(await redis.zcard(`${p}standard:203.0.113.7`)).toBe(limit);
    expect(await redis.zcard(`${p}auth:203.0.113.7`)).toBe(5);
    // Through the batched path: each store sent its 80 hits of the tick as one call.
    for (const r of primaries) expect(r.calls).toEqual([80]);
    for (const s of stores) expect(s.healthy).toBe(true);
  });

  it("sends the script's text only when Redis lacks it (NOSCRIPT after a flush or restart), then EVALSHA again", async () => {
    const redis = await client();
    const store = new RecordingRedisStore(redis, prefix());
    await store.hit("k", 3, WINDOW, T0);
    expect(await redis.script("EXISTS", SLIDING_WINDOW_SHA)).toEqual([1]);
    await redis.script("FLUSH"); // what a restarted Redis looks like (every client recovers by NOSCRIPT)
    expect(await redis.script("EXISTS", SLIDING_WINDOW_SHA)).toEqual([0]);
    const calls0 = Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info("commandstats"))?.[1] ?? 0);
    const results = await store.hitMany(
      [1, 2, 3].map((i) => ({ key: "k", limit: 3, windowMs: WINDOW, now: T0 + i })),
    );
    expect(results.map((r) => [r.allowed, r.count])).toEqual([
      [true, 2],
      [true, 3],
      [false, 3],
    ]);
    expect(await redis.script("EXISTS", SLIDING_WINDOW_SHA)).toEqual([1]);
    expect((await store.hit("k", 3, WINDOW, T0 + 5)).count).toBe(3);
    const calls1 = Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info("commandstats"))?.[1] ?? 0);
    expect(calls1 - calls0).toBeGreaterThanOrEqual(2); // the refused EVALSHA, and the one after the reload
  });

  it("a call gathers the hits of two event-loop turns (TURNS_PER_CALL), and a full batch goes at once", async () => {
    const primary = new RecordingRedisStore(await client(), prefix());
    const store = new FallbackRateLimitStore(primary, silent, 2_000);
    await store.hit("warm", 10, WINDOW, T0);
    const tick = () => new Promise((r) => setImmediate(r));
    await tick(); // the warm call's bookkeeping is done: nothing in flight
    const first = [0, 1].map((i) => store.hit("k", 10, WINDOW, T0 + i));
    await tick(); // the turn after: the call is still gathering
    const second = [2, 3, 4].map((i) => store.hit("k", 10, WINDOW, T0 + i));
    const results = await Promise.all([...first, ...second]);
    expect(primary.calls.slice(1)).toEqual([5]);
    expect(results.map((r) => r.count)).toEqual([1, 2, 3, 4, 5]);
    // 128 hits (MAX_BATCH) do not wait for the second turn, nor do they ride with the next hits.
    const full = Array.from({ length: 128 }, (_, i) => store.hit("full", 1_000, WINDOW, T0 + i));
    await tick();
    const late = store.hit("full", 1_000, WINDOW, T0 + 200);
    await Promise.all([...full, late]);
    expect(primary.calls.slice(2)).toEqual([128, 1]);
  });

  it("hits arriving while a call is in flight wait for it, then go together in one call", async () => {
    const proxy = await startProxy(new URL(REDIS_URL));
    const primary = new RecordingRedisStore(await client(proxy.url), prefix());
    const store = new FallbackRateLimitStore(primary, silent, 2_000);
    await store.hit("warm", 10, WINDOW, T0);
    proxy.stall(); // keeps the first call in flight
    const tick = () => new Promise((r) => setImmediate(r));
    const pending = [0, 1, 2].map((i) => store.hit("k", 5, WINDOW, T0 + i));
    while (primary.calls.length < 2) await tick(); // the first call is out (stalled in the proxy)
    pending.push(store.hit("k", 5, WINDOW, T0 + 3), store.hit("k", 5, WINDOW, T0 + 4));
    await tick();
    pending.push(store.hit("k", 5, WINDOW, T0 + 5), store.hit("k", 5, WINDOW, T0 + 6));
    await tick();
    expect(primary.calls.slice(1)).toEqual([3]); // only the first call is out
    proxy.resume();
    const results = await Promise.all(pending);
    expect(primary.calls.slice(1)).toEqual([3, 4]);
    expect(results.map((r) => r.count)).toEqual([1, 2, 3, 4, 5, 5, 5]);
    expect(store.healthy).toBe(true);
    await proxy.cut();
  });

  it("Redis stalled mid-batch: every caller of the batch is counted in memory after the timeout, then back on Redis", async () => {
    const proxy = await startProxy(new URL(REDIS_URL));
    const primary = new RecordingRedisStore(await client(proxy.url), prefix());
    const store = new FallbackRateLimitStore(primary, silent, 150);
    expect((await store.hit("warm", 10, WINDOW, T0)).allowed).toBe(true); // connected, script loaded
    proxy.stall();
    const started = performance.now();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => store.hit("k", 10, WINDOW, T0 + i)),
    );
    const took = performance.now() - started;
    // Redis saw nothing while stalled, so every answer came from memory: exact per instance.
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(results.map((r) => r.count)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => i + 1),
      ...Array(20).fill(10),
    ]);
    expect(store.healthy).toBe(false);
    expect(store.lastError).toMatch(/did not answer within 150 ms/);
    expect(primary.calls.slice(1)).toEqual([30]); // one call for the tick's 30 hits, waited out once
    expect(took).toBeGreaterThanOrEqual(150 - 5);
    expect(took).toBeLessThan(2_000);
    proxy.resume();
    const again = await store.hit("other", 10, WINDOW, T0 + 100);
    expect(again.allowed).toBe(true);
    expect(store.healthy).toBe(true);
    await proxy.cut();
  });

  it("connection lost mid-batch: every caller of the batch falls back to memory", async () => {
    const proxy = await startProxy(new URL(REDIS_URL));
    const primary = new RecordingRedisStore(await client(proxy.url), prefix());
    const store = new FallbackRateLimitStore(primary, silent, 1_000);
    await store.hit("warm", 10, WINDOW, T0);
    proxy.stall();
    const before = proxy.received;
    const first = store.hit("k", 4, WINDOW, T0);
    const rest = Array.from({ length: 11 }, (_, i) => store.hit("k", 4, WINDOW, T0 + 1 + i)); // the same call
    while (proxy.received === before) await new Promise((r) => setTimeout(r, 5));
    await proxy.cut(); // the in-flight call's connection drops, and Redis stays unreachable
    const results = await Promise.all([first, ...rest]);
    expect(primary.calls.slice(1)).toEqual([12]);
    expect(results.filter((r) => r.allowed)).toHaveLength(4);
    expect(results.filter((r) => !r.allowed)).toHaveLength(8);
    expect(store.healthy).toBe(false);
    expect(store.lastError).not.toMatch(/did not answer/); // failed by the connection, not the timer
  });
});
