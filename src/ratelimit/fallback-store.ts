import type { Logger } from "pino";
import { Coalescer } from "../lib/coalescer.js";
import { MemoryRateLimitStore } from "./memory-store.js";
import type { BatchRateLimitStore, RateLimitHit, RateLimitResult, RateLimitStore } from "./store.js";

/** Hits per call to the primary at most: bounds the time Redis spends in one script (~10 µs a hit). */
const MAX_BATCH = 128;

/**
 * Redis first; when Redis fails or times out, the same request is counted in memory instead, so
 * traffic stays limited per instance rather than unlimited. `healthy` feeds `/readyz`.
 *
 * Concurrent requests' hits share one call to the primary (`Coalescer`, as the API-key lookups
 * do): a hit while no call is in flight is sent at once, alone, so nothing waits at low load; hits
 * arriving while one is in flight go together when it returns. So each request costs at most one
 * Redis round trip, and under load one round trip serves many. The timeout is per call, one timer
 * for all its hits; when a call fails or times out, every hit in it is counted in memory.
 */
export class FallbackRateLimitStore implements RateLimitStore {
  readonly kind = "redis" as const;
  readonly #memory = new MemoryRateLimitStore();
  readonly #batches: Coalescer<RateLimitHit, RateLimitResult>;
  #lastError: string | undefined;
  #lastWarnAt = 0;

  constructor(
    private readonly primary: BatchRateLimitStore,
    private readonly log: Logger,
    private readonly timeoutMs = 250,
  ) {
    this.#batches = new Coalescer((hits) => this.#hitBatch(hits), {
      maxBatch: MAX_BATCH,
      // Another call starts beside one in flight only for a full batch (the Coalescer's rule), so
      // under ordinary load one call is in flight and the rest gather behind it. The bound is high
      // so that while Redis stalls (each call waits out the timeout) hits do not queue behind it.
      maxInFlight: 32,
      splitOnError: false, // #hitBatch does not fail: a failed call falls back per hit
    });
  }

  get healthy(): boolean {
    return this.#lastError === undefined;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    return this.#batches.submit({ key, limit, windowMs, now });
  }

  async #hitBatch(hits: RateLimitHit[]): Promise<RateLimitResult[]> {
    try {
      const results = await withTimeout(this.primary.hitMany(hits), this.timeoutMs);
      if (this.#lastError !== undefined) {
        this.log.info("rate limit store recovered; back on Redis");
        this.#lastError = undefined;
      }
      return results;
    } catch (err) {
      this.#lastError = err instanceof Error ? err.message : String(err);
      const now = hits[0]?.now ?? 0;
      if (now - this.#lastWarnAt > 60_000) {
        this.#lastWarnAt = now;
        this.log.warn(
          { err: this.#lastError },
          "rate limit store unavailable; limiting per instance in memory",
        );
      }
      // In order, as Redis would have applied them.
      const results: RateLimitResult[] = [];
      for (const h of hits) results.push(await this.#memory.hit(h.key, h.limit, h.windowMs, h.now));
      return results;
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
