/**
 * Sliding-window-log rate limiting: each allowed request is remembered with its time for one
 * window; a request is allowed while fewer than `limit` requests lie in `(now - window, now]`.
 * A request is therefore allowed again exactly when the oldest remembered one leaves the window.
 * Rejected requests are not remembered (a client that keeps knocking is not locked out forever).
 */
export interface RateLimitResult {
  allowed: boolean;
  /** Requests in the window after this one (at most `limit`). */
  count: number;
  limit: number;
  /** Milliseconds until the oldest request in the window leaves it (a slot frees up). */
  resetMs: number;
}

/** One request's hit: `key` counted against `limit` per `windowMs`, at `now` (ms). */
export interface RateLimitHit {
  key: string;
  limit: number;
  windowMs: number;
  now: number;
}

export interface RateLimitStore {
  readonly kind: "memory" | "redis";
  hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult>;
  close(): Promise<void>;
}

/** A store that applies several hits in one operation (one round trip), in order, atomically. */
export interface BatchRateLimitStore extends RateLimitStore {
  /**
   * The results `hit` would give called for each in turn, in order. A rejection fails every hit
   * of the call, whose effect in the store is then unknown (as for one hit whose answer was lost).
   */
  hitMany(hits: readonly RateLimitHit[]): Promise<RateLimitResult[]>;
}
