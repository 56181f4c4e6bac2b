import { createHash, randomBytes } from "node:crypto";
import { Command, type Redis } from "ioredis";
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
 *
 * A key's first hit in a call reads the set (trim, count, oldest; newest when it adds); the
 * call then keeps the key's count, oldest and newest itself, so a further hit on the same key
 * (one busy client: the common case of a shared call) costs no command of its own: its entry
 * joins the key's one ZADD, sent before the set is next read or trimmed and at the end; a trim
 * and an oldest read happen only when the oldest entry has left its window. The expiry is set
 * once per key at the end, from the key's last added hit: what setting it at every added hit would
 * leave. A refused hit adds nothing and removes only entries older than every other, so it leaves
 * the newest entry and the expiry as they were.
 */
const SLIDING_WINDOW_LUA = `
local prefix = ARGV[1]
local out = {}
local keys = {}
-- A key's allowed hits are added by one ZADD (scores and members in pairs), sent before anything
-- else reads or trims that key's set, and at the end: one command per key and call instead of one
-- per hit, with the same set afterwards.
local function flush(key, k)
  if #k.pending > 0 then
    redis.call('ZADD', key, unpack(k.pending))
    k.pending = {}
  end
end
for i = 1, #KEYS do
  local key = KEYS[i]
  local now = tonumber(ARGV[3 * i - 1])
  local window = tonumber(ARGV[3 * i])
  local limit = tonumber(ARGV[3 * i + 1])
  local cutoff = now - window
  local k = keys[key]
  if k == nil then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
    k = { count = redis.call('ZCARD', key), pending = {} }
    if k.count > 0 then k.oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]) end
    keys[key] = k
  elseif k.count > 0 and k.oldest <= cutoff then
    flush(key, k)
    k.count = k.count - redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
    if k.count > 0 then
      k.oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
    else
      k.oldest = nil
      k.newest = nil
    end
  end
  local allowed = 0
  if k.count < limit then
    if k.count > 0 and k.newest == nil then
      flush(key, k)
      k.newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
    end
    k.pending[#k.pending + 1] = now
    k.pending[#k.pending + 1] = prefix .. i
    if #k.pending >= 2000 then flush(key, k) end -- unpack's argument limit
    k.count = k.count + 1
    if k.oldest == nil or now < k.oldest then k.oldest = now end
    if k.newest == nil or now > k.newest then k.newest = now end
    -- The key lives until its newest entry leaves the window (expiring with the oldest would drop
    -- the newer entries with it and reset the count early). Relative expiry: the scores are the
    -- caller's clock, which need not be Redis's.
    k.expiry = k.newest + window - now + 1
    allowed = 1
  end
  out[3 * i - 2] = allowed
  out[3 * i - 1] = k.count
  out[3 * i] = math.max(0, math.ceil((k.oldest or now) + window - now))
end
for key, k in pairs(keys) do
  flush(key, k)
  if k.expiry then redis.call('PEXPIRE', key, k.expiry) end
end
return out
`;

export const SLIDING_WINDOW_SHA = createHash("sha1").update(SLIDING_WINDOW_LUA).digest("hex");

export class RedisRateLimitStore implements BatchRateLimitStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #instance = randomBytes(6).toString("hex");
  #calls = 0;

  constructor(redis: Redis, prefix = "stablegate:rl:") {
    this.#redis = redis;
    this.#prefix = prefix;
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
    // [script sha, key count, n keys, the call's member prefix, then now, window, limit per hit]
    const args: (string | number)[] = new Array(4 * n + 3);
    args[0] = SLIDING_WINDOW_SHA;
    args[1] = n;
    for (let i = 0; i < n; i++) {
      const h = hits[i] as RateLimitHit;
      args[2 + i] = this.#prefix + h.key;
      args[n + 3 + 3 * i] = h.now;
      args[n + 4 + 3 * i] = h.windowMs;
      args[n + 5 + 3 * i] = h.limit;
    }
    args[n + 2] = `${this.#instance}:${this.#calls++}:`;
    const reply = await this.#evalsha(args);
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

  /**
   * EVALSHA, sent as a command of its own: hits are already batched, so ioredis's auto-pipelining
   * (a pipeline object and a deferred flush per call) would only add work. The script text goes
   * to Redis only when Redis does not have it yet (NOSCRIPT: first use, a restarted or flushed
   * Redis); EVAL runs it and caches it, and the next EVALSHA finds it.
   */
  async #evalsha(args: (string | number)[]): Promise<number[]> {
    try {
      return (await this.#redis.sendCommand(new Command("evalsha", args))) as number[];
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      args[0] = SLIDING_WINDOW_LUA;
      return (await this.#redis.sendCommand(new Command("eval", args))) as number[];
    }
  }

  async close(): Promise<void> {
    // The connection belongs to the caller.
  }
}
