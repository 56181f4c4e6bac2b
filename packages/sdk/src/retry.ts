/**
 * When a failed attempt is tried again, and after how long.
 *
 * Safe to repeat: a GET, and a creating POST that carries an `Idempotency-Key` (the gateway
 * replays the stored answer of a request that was processed, and a request that failed stored
 * nothing). Other POSTs (approve, reject, rotate the secret, send a test, retry a delivery, set
 * the URL) are repeated only on 429: the rate limit answers before the route runs, so nothing was
 * processed. A 503 is NOT such a proof: SERVICE_UNAVAILABLE is also the answer to a database
 * COMMIT whose outcome is unknown (the gateway's src/db/transient.ts), so an approve answered 503
 * may have been applied; the caller gets the error and decides (reading the withdrawal first).
 *
 * | answer                            | GET / keyed POST          | other POST |
 * | --------------------------------- | ------------------------- | ---------- |
 * | no answer (network), timeout      | retried                   | thrown     |
 * | 429                               | retried after Retry-After | retried    |
 * | 503, 502, 504                     | retried                   | thrown     |
 * | 409 IDEMPOTENCY_CONFLICT          | retried (first one runs)  | —          |
 * | anything else                     | thrown                    | thrown     |
 */
export type Safety = "safe" | "unsafe";

export interface RetryDecisionInput {
  safety: Safety;
  /** HTTP status, or undefined when no answer arrived (network error, timeout). */
  status: number | undefined;
  code: string | undefined;
}

export function shouldRetry({ safety, status, code }: RetryDecisionInput): boolean {
  if (status === 429) return true;
  if (safety !== "safe") return false;
  if (status === undefined) return true;
  if (status === 502 || status === 503 || status === 504) return true;
  return status === 409 && code === "IDEMPOTENCY_CONFLICT";
}

/**
 * Seconds to wait as the server says: `Retry-After` (seconds or an HTTP date), else
 * `RateLimit-Reset` (seconds until the window frees a request). Undefined when neither is usable.
 */
export function serverDelaySeconds(headers: Headers, now = Date.now()): number | undefined {
  const retryAfter = headers.get("retry-after");
  if (retryAfter !== null && retryAfter.trim() !== "") {
    const value = retryAfter.trim();
    if (/^\d+(\.\d+)?$/.test(value)) return Number(value);
    const date = Date.parse(value);
    if (Number.isFinite(date)) return Math.max(0, (date - now) / 1000);
  }
  const reset = headers.get("ratelimit-reset");
  if (reset !== null && /^\d+(\.\d+)?$/.test(reset.trim())) return Number(reset.trim());
  return undefined;
}

export interface BackoffOptions {
  initialDelayMs: number;
  maxDelayMs: number;
}

/**
 * Exponential backoff with jitter for attempt `n` (0 = the first retry): the nominal delay
 * doubles from `initialDelayMs` up to `maxDelayMs`, and a random half of it is dropped so that
 * many clients failing together do not come back together. A server-given delay is a floor: the
 * wait is at least that, plus up to 10 % jitter for the same reason.
 */
export function retryDelayMs(
  attempt: number,
  serverSeconds: number | undefined,
  { initialDelayMs, maxDelayMs }: BackoffOptions,
  random: () => number = Math.random,
): number {
  if (serverSeconds !== undefined) {
    const floor = serverSeconds * 1000;
    return Math.ceil(floor + floor * 0.1 * random());
  }
  const nominal = Math.min(maxDelayMs, initialDelayMs * 2 ** attempt);
  return Math.ceil(nominal / 2 + (nominal / 2) * random());
}
