import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { BatchRateLimitStore, RateLimitHit, RateLimitResult } from "./store.js";

/**
 * The sliding window log in a Redis sorted set per key, updated atomically by one Lua script, so
 * every instance sharing the Redis sees one exact count. Scores are the callers' clock in ms
 * (instances are expected to be NTP-synchronised; it also keeps the clock injectable in tests).
 *
 * One script call takes the hits of several requests (KEYS[i] with ARGV triples now, window,
 * limit) and applies them one after another, in order, exactly as the same hits sent one script
 * call each would: a key hit twice in one call counts twice, and the call is atomic as a whole.
 * ARGV[1] is a prefix unique to the call (this store's random id and the call's sequence number);
 * member `i` of the call is that prefix and `i`, so a member is unique without a string per hit.
 * It returns three integers per hit: allowed (0/1), the count after the hit, and the ms until the
 * oldest entry leaves the window.
 */
const SLIDING_WINDOW_LUA = `
local prefix = ARGV[1]
local out = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local now = tonumber(ARGV[3 * i - 1])
  local window = tonumber(ARGV[3 * i])
  local limit = tonumber(ARGV[3 * i + 1])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  local allowed = 0
  if count < limit then
    redis.call('ZADD', key, now, prefix .. i)
    count = count + 1
    allowed = 1
    -- The key lives until its newest entry leaves the window (expiring with the oldest would drop
    -- the newer entries with it and reset the count early). Relative expiry: the scores are the
    -- caller's clock, which need not be Redis's. A refused hit adds nothing and removes only
    -- entries older than every other, so the newest and the expiry the last added hit set stand.
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
    redis.call('PEXPIRE', key, tonumber(newest) + window - now + 1)
  end
  -- An empty log (only a refused hit with limit 0 leaves one) frees up a window from now.
  local oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2] or now)
  local reset = math.max(0, math.ceil(oldest + window - now))
  out[3 * i - 2] = allowed
  out[3 * i - 1] = count
  out[3 * i] = reset
end
return out
`;

/** ioredis's command from `defineCommand` without a fixed key count: the key count comes first. */
type SlidingWindowCommand = (...args: (string | number)[]) => Promise<number[]>;

export class RedisRateLimitStore implements BatchRateLimitStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis & { slidingWindowHits?: SlidingWindowCommand };
  readonly #prefix: string;
  readonly #instance = randomBytes(6).toString("hex");
  #calls = 0;

  constructor(redis: Redis, prefix = "stablegate:rl:") {
    this.#redis = redis;
    this.#prefix = prefix;
    // ioredis sends EVALSHA, and the script itself (EVAL) only on a connection's first call or
    // after NOSCRIPT (a restarted or flushed Redis): the script is loaded once per connection.
    redis.defineCommand("slidingWindowHits", { lua: SLIDING_WINDOW_LUA });
  }

  async hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    const [result] = await this.hitMany([{ key, limit, windowMs, now }]);
    return result as RateLimitResult;
  }

  /**
   * Applies `hits` in order in one script call (one round trip); a result per hit, in order.
   * Concurrent requests' hits are gathered into one call by `FallbackRateLimitStore`.
   */
  async hitMany(hits: readonly RateLimitHit[]): Promise<RateLimitResult[]> {
    const n = hits.length;
    // [key count, n keys, the call's member prefix, then now, window, limit per hit]
    const args: (string | number)[] = new Array(4 * n + 2);
    args[0] = n;
    for (let i = 0; i < n; i++) {
      const h = hits[i] as RateLimitHit;
      args[1 + i] = this.#prefix + h.key;
      args[n + 2 + 3 * i] = h.now;
      args[n + 3 + 3 * i] = h.windowMs;
      args[n + 4 + 3 * i] = h.limit;
    }
    args[n + 1] = `${this.#instance}:${this.#calls++}:`;
    const reply = await (this.#redis.slidingWindowHits as SlidingWindowCommand).apply(this.#redis, args);
    const results: RateLimitResult[] = new Array(n);
    for (let i = 0; i < n; i++) {
      results[i] = {
        allowed: reply[3 * i] === 1,
        count: reply[3 * i + 1] as number,
        limit: (hits[i] as RateLimitHit).limit,
        resetMs: reply[3 * i + 2] as number,
      };
    }
    return results;
  }

  async close(): Promise<void> {
    // The connection belongs to the caller.
  }
}
