import type { RateLimitResult, RateLimitStore } from "./store.js";

/** In-process sliding window log. Exact for one instance; used without REDIS_URL and as fallback. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly kind = "memory" as const;
  readonly #log = new Map<string, number[]>();
  readonly #sweeper: NodeJS.Timeout;
  #maxWindowMs = 0;
  #clockNow = 0;

  constructor(sweepEveryMs = 60_000) {
    // Drops keys whose every entry has left the window, so idle clients cost no memory.
    this.#sweeper = setInterval(() => this.sweep(this.#clockNow), sweepEveryMs);
    this.#sweeper.unref();
  }

  async hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    this.#maxWindowMs = Math.max(this.#maxWindowMs, windowMs);
    this.#clockNow = Math.max(this.#clockNow, now);
    let times = this.#log.get(key);
    if (!times) {
      times = [];
      this.#log.set(key, times);
    }
    const cutoff = now - windowMs;
    let expired = 0;
    while (expired < times.length && (times[expired] as number) <= cutoff) expired++;
    if (expired > 0) times.splice(0, expired);

    const allowed = times.length < limit;
    if (allowed) {
      // Keep the log sorted even if an injected clock goes backwards.
      let i = times.length;
      while (i > 0 && (times[i - 1] as number) > now) i--;
      times.splice(i, 0, now);
    }
    const oldest = times[0] ?? now;
    return { allowed, count: times.length, limit, resetMs: Math.max(0, oldest + windowMs - now) };
  }

  sweep(now: number): void {
    for (const [key, times] of this.#log) {
      const last = times.at(-1);
      if (last === undefined || last <= now - this.#maxWindowMs) this.#log.delete(key);
    }
  }

  get size(): number {
    return this.#log.size;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#log.clear();
  }
}
