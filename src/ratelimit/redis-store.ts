import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { RateLimitResult, RateLimitStore } from "./store.js";

/**
 * The sliding window log in a Redis sorted set, updated atomically by one Lua script, so every
 * instance sharing the Redis sees one exact count. Scores are the callers' clock in ms (instances
 * are expected to be NTP-synchronised; it also keeps the clock injectable in tests).
 */
const SLIDING_WINDOW_LUA = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed = 0
if count < limit then
  redis.call('ZADD', key, now, ARGV[4])
  count = count + 1
  allowed = 1
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
if oldest then
  -- The key lives until its newest entry leaves the window (expiring with the oldest would drop
  -- the newer entries with it and reset the count early). Relative expiry: the scores are the
  -- caller's clock, which need not be Redis's.
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  redis.call('PEXPIRE', key, tonumber(newest) + window - now + 1)
else
  oldest = now
end
return { allowed, count, tostring(oldest) }
`;

type SlidingWindowCommand = (
  key: string,
  now: string,
  windowMs: string,
  limit: string,
  member: string,
) => Promise<[number, number, string]>;

export class RedisRateLimitStore implements RateLimitStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis & { slidingWindowHit?: SlidingWindowCommand };
  readonly #prefix: string;
  #seq = 0;
  readonly #instance = randomBytes(6).toString("hex");

  constructor(redis: Redis, prefix = "stablegate:rl:") {
    this.#redis = redis;
    this.#prefix = prefix;
    redis.defineCommand("slidingWindowHit", { numberOfKeys: 1, lua: SLIDING_WINDOW_LUA });
  }

  async hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    const hit = this.#redis.slidingWindowHit as SlidingWindowCommand;
    // Members must be unique per request even when two requests share a millisecond.
    const member = `${now}:${this.#instance}:${this.#seq++}`;
    const [allowed, count, oldest] = await hit.call(
      this.#redis,
      this.#prefix + key,
      String(now),
      String(windowMs),
      String(limit),
      member,
    );
    return { allowed: allowed === 1, count, limit, resetMs: Math.max(0, Number(oldest) + windowMs - now) };
  }

  async close(): Promise<void> {
    // The connection belongs to the caller.
  }
}
