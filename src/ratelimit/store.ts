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

export interface RateLimitStore {
  readonly kind: "memory" | "redis";
  hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult>;
  close(): Promise<void>;
}
