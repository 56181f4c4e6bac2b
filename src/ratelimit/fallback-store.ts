import type { Logger } from "pino";
import { MemoryRateLimitStore } from "./memory-store.js";
import type { BatchRateLimitStore, RateLimitHit, RateLimitResult, RateLimitStore } from "./store.js";

/** Hits per call to the primary at most: bounds the time Redis spends in one script (~10 µs a hit). */
const MAX_BATCH = 128;
/**
 * Calls in flight at most. Another call starts beside one in flight only for a full batch, so
 * under ordinary load one call is in flight and the rest gather behind it; the bound is high so
 * that while Redis stalls (each call waits out the timeout) hits do not queue behind it.
 */
const MAX_IN_FLIGHT = 32;
/**
 * Event-loop turns a call gathers hits for, counting the turn that scheduled it: the call is sent
 * at the end of the second (or as soon as a batch is full). Under load a turn reads about ten
 * requests, and one call per turn made the round trip's fixed cost (on each side a socket write, a
 * read and a wake-up: ~100 µs of the service's CPU and ~95 µs of Redis's per call, whatever its
 * size) the limiter's largest. Two turns: bench:api 0.09 → 0.06 script calls per request, the
 * service's CPU added by the limiter 17–27 → 3–12.5 µs per request, p50 latency unchanged; three
 * turns saved no more (the wait then cost more than the calls). An idle loop's turn takes
 * microseconds, so at low load a hit waits no longer than before.
 */
const TURNS_PER_CALL = 2;

interface Waiting {
  hit: RateLimitHit;
  resolve: (result: RateLimitResult) => void;
  reject: (reason: unknown) => void;
}

/**
 * Redis first; when Redis fails or times out, the same request is counted in memory instead, so
 * traffic stays limited per instance rather than unlimited. `healthy` feeds `/readyz`.
 *
 * Concurrent requests' hits share one call to the primary, so a request costs at most one Redis
 * round trip and under load one round trip serves many. A call is sent at the end of the event-loop
 * turn after the current one (`setImmediate` twice, after the I/O callbacks: `TURNS_PER_CALL`), so
 * every request read in those two turns goes in it, and at low load a hit waits only for two
 * short turns. While a call is in flight, new hits wait for it and go together, two turns after
 * the one in which it returned. (The `Coalescer` the API-key lookups use sends the first hit at
 * once and alone instead: here that split each loop turn's requests over two calls and made the
 * round trips — a write, a read and a wake-up on each side — the limiter's largest cost.) The
 * timeout is per call, one timer for all its hits; when a call fails or times out, every hit in it
 * is counted in memory, in order.
 */
export class FallbackRateLimitStore implements RateLimitStore {
  readonly kind = "redis" as const;
  readonly #memory = new MemoryRateLimitStore();
  #waiting: Waiting[] = [];
  #inFlight = 0;
  #scheduled = false;
  /** Turns the scheduled call has waited so far. */
  #turnsWaited = 0;
  #lastError: string | undefined;
  #lastWarnAt = 0;

  constructor(
    private readonly primary: BatchRateLimitStore,
    private readonly log: Logger,
    private readonly timeoutMs = 250,
  ) {}

  get healthy(): boolean {
    return this.#lastError === undefined;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ hit: { key, limit, windowMs, now }, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#waiting.length === 0) return;
    if (this.#inFlight > 0 && (this.#waiting.length < MAX_BATCH || this.#inFlight >= MAX_IN_FLIGHT)) return;
    this.#scheduled = true;
    setImmediate(this.#send);
  }

  readonly #send = (): void => {
    if (++this.#turnsWaited < TURNS_PER_CALL && this.#waiting.length < MAX_BATCH) {
      setImmediate(this.#send); // one more turn's hits
      return;
    }
    this.#turnsWaited = 0;
    this.#scheduled = false;
    while (
      this.#waiting.length > 0 &&
      (this.#inFlight === 0 || (this.#waiting.length >= MAX_BATCH && this.#inFlight < MAX_IN_FLIGHT))
    ) {
      const batch = this.#waiting.splice(0, MAX_BATCH);
      this.#inFlight++;
      void this.#hitBatch(batch.map((w) => w.hit))
        .then(
          (results) => {
            for (let i = 0; i < batch.length; i++)
              (batch[i] as Waiting).resolve(results[i] as RateLimitResult);
          },
          (err) => {
            for (const w of batch) w.reject(err); // not expected: #hitBatch answers from memory
          },
        )
        .finally(() => {
          this.#inFlight--;
          this.#schedule();
        });
    }
  };

  /** Never rejects: a failed or timed-out call is answered from memory. */
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
