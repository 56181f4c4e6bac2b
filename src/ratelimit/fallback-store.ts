import type { Logger } from "pino";
import { MemoryRateLimitStore } from "./memory-store.js";
import type { RateLimitResult, RateLimitStore } from "./store.js";

/**
 * Redis first; when Redis fails or times out, the same request is counted in memory instead, so
 * traffic stays limited per instance rather than unlimited. `healthy` feeds `/readyz`.
 */
export class FallbackRateLimitStore implements RateLimitStore {
  readonly kind = "redis" as const;
  readonly #memory = new MemoryRateLimitStore();
  #lastError: string | undefined;
  #lastWarnAt = 0;

  constructor(
    private readonly primary: RateLimitStore,
    private readonly log: Logger,
    private readonly timeoutMs = 250,
  ) {}

  get healthy(): boolean {
    return this.#lastError === undefined;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  async hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    try {
      const result = await withTimeout(this.primary.hit(key, limit, windowMs, now), this.timeoutMs);
      if (this.#lastError !== undefined) {
        this.log.info("rate limit store recovered; back on Redis");
        this.#lastError = undefined;
      }
      return result;
    } catch (err) {
      this.#lastError = err instanceof Error ? err.message : String(err);
      if (now - this.#lastWarnAt > 60_000) {
        this.#lastWarnAt = now;
        this.log.warn(
          { err: this.#lastError },
          "rate limit store unavailable; limiting per instance in memory",
        );
      }
      return this.#memory.hit(key, limit, windowMs, now);
    }
  }

  async close(): Promise<void> {
    await this.#memory.close();
    await this.primary.close();
  }
}

/**
 * Rejects when `p` has not settled `ms` after the call. When the timer fires the rejection waits
 * one more turn of the event loop (`setImmediate`, after the I/O poll phase): if this process was
 * descheduled or blocked past the deadline, an answer already waiting in the socket is read first
 * and wins, so a busy process does not mistake a fast Redis for a slow one.
 */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      immediate = setImmediate(() => reject(new Error(`rate limit store did not answer within ${ms} ms`)));
    }, ms);
  });
  return Promise.race([p, timeout]).finally(() => {
    clearTimeout(timer);
    if (immediate) clearImmediate(immediate);
  });
}
