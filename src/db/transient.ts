/**
 * Transient database faults: errors that say nothing about the request, only that the database
 * could not serve it at that moment — a failover, a pooler or server restart, an operator ending
 * backends, a deadlock or serialization conflict. A transaction that failed with one before its
 * COMMIT was sent has rolled back and may simply run again (`retryTransient`); one that failed
 * during its COMMIT may or may not have committed (`CommitOutcomeUnknownError`) and is never run
 * again here. What survives the retries is answered 503 SERVICE_UNAVAILABLE (http/errors.ts).
 */

/**
 * SQLSTATEs of a transient fault (PostgreSQL appendix A). Class 08 (connection exceptions) is
 * matched as a class, except 08P01 (protocol violation: a bug, not a fault of the moment).
 */
const TRANSIENT_SQLSTATES = new Set([
  "40001", // serialization_failure: the transaction rolled back; running it again is the documented answer
  "40P01", // deadlock_detected: this transaction was chosen as the victim and rolled back
  "57P01", // admin_shutdown: pg_terminate_backend, a fast shutdown, a failover
  "57P02", // crash_shutdown: another backend crashed and the server is resetting
  "57P03", // cannot_connect_now: the server is starting up or shutting down
  "57P05", // idle_session_timeout: the server closed an idle pooled connection
  "53300", // too_many_connections
]);

/** The two SQLSTATEs after which the server has rolled back the transaction itself (not a lost connection). */
const ROLLED_BACK_BY_SERVER = new Set(["40001", "40P01"]);

/**
 * Failures that come only after the pool's whole `connectionTimeoutMillis` (10 s): no pooled
 * connection became free, or a new one could not be opened in time. Transient, but not retried.
 */
const TIMED_OUT_MESSAGES = new Set([
  "timeout exceeded when trying to connect",
  "Connection terminated due to connection timeout",
  "timeout expired",
]);

/**
 * node-postgres refuses a statement with these, WITHOUT sending it, on a client whose connection
 * already failed (or was closed): a COMMIT refused so was never sent, and the server, having lost
 * the session, rolled the transaction back.
 */
const NOT_SENT_MESSAGES = new Set([
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
]);

/**
 * node-postgres (`pg`, `pg-pool`) raises these, without a SQLSTATE, when the connection is lost or
 * cannot be made (node_modules/pg/lib/client.js, node_modules/pg-pool/index.js, pg 8.23).
 */
const CONNECTION_MESSAGES = new Set([
  "Connection terminated unexpectedly",
  "Connection terminated",
  ...NOT_SENT_MESSAGES,
  ...TIMED_OUT_MESSAGES,
]);

/** Socket errors of the database connection (a Node system error: it has `syscall`). */
const SOCKET_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "EAI_AGAIN"]);

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  syscall?: unknown;
}

/**
 * The connection broke while COMMIT was in flight: the transaction may have committed or not, and
 * nothing here can tell which. Never retried (running it again could do the work twice); answered
 * 503 like any transient fault, so the client retries — with its Idempotency-Key, which then either
 * replays the committed answer or runs the request for the first time.
 */
export class CommitOutcomeUnknownError extends Error {
  constructor(cause: unknown) {
    super(`the database connection failed during COMMIT; the transaction may or may not have committed`, {
      cause,
    });
    this.name = "CommitOutcomeUnknownError";
  }
}

/**
 * True for a transient database fault (see the lists above), `CommitOutcomeUnknownError` included.
 * Only the error itself is looked at, not its `cause` chain: an error of another component that
 * wraps a socket error (a chain node's `fetch failed`) is that component's to classify.
 */
export function isTransientDatabaseError(err: unknown): boolean {
  if (err instanceof CommitOutcomeUnknownError) return true;
  if (typeof err !== "object" || err === null) return false;
  const { code, message, syscall } = err as ErrorLike;
  if (typeof code === "string") {
    if (TRANSIENT_SQLSTATES.has(code)) return true;
    if (code.startsWith("08") && code.length === 5 && code !== "08P01") return true;
    if (SOCKET_CODES.has(code) && typeof syscall === "string") return true;
  }
  return typeof message === "string" && CONNECTION_MESSAGES.has(message);
}

/**
 * Whether a transaction that failed with `err` before its COMMIT may run again: a transient fault,
 * but not an unknown commit outcome, and not a connection that already took the pool's whole
 * connection timeout (waiting that long again would only hold the request longer).
 */
export function isRetryableBeforeCommit(err: unknown): boolean {
  if (err instanceof CommitOutcomeUnknownError) return false;
  const message = (err as ErrorLike | null)?.message;
  if (typeof message === "string" && TIMED_OUT_MESSAGES.has(message)) return false;
  return isTransientDatabaseError(err);
}

/**
 * A COMMIT that failed with `err`: is the outcome unknown? Not when the server answered that it
 * rolled the transaction back (a serialization failure or deadlock found at commit) or refused it
 * for a reason of its own (a deferred constraint), nor when the COMMIT was never sent (the
 * connection had failed before): those are definite. A connection lost with the COMMIT on it is not.
 */
export function commitOutcomeUnknown(err: unknown): boolean {
  const { code, message } = (err ?? {}) as ErrorLike;
  if (typeof code === "string" && ROLLED_BACK_BY_SERVER.has(code)) return false;
  if (typeof message === "string" && NOT_SENT_MESSAGES.has(message)) return false;
  return isTransientDatabaseError(err);
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Back-off before the n-th retry: up to `baseDelayMs * 2^(n-1)`, at least half of it (jitter). */
  baseDelayMs: number;
}

/** Three attempts, 25-50 ms then 50-100 ms apart: long enough for a pool to reconnect, short for a request. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 3, baseDelayMs: 50 };

/**
 * Runs `attempt` until it succeeds, fails with an error that `isRetryableBeforeCommit` refuses, or
 * has been tried `policy.attempts` times; the last error is thrown as it was. `onRetry` is told of
 * each retry (for a log line or a metric).
 */
export async function retryTransient<T>(
  attempt: () => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
  onRetry?: (err: unknown, nextAttempt: number) => void,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= policy.attempts || !isRetryableBeforeCommit(err)) throw err;
      onRetry?.(err, n + 1);
      const ceiling = policy.baseDelayMs * 2 ** (n - 1);
      await new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
    }
  }
}

/**
 * The log level of a failure that a background job will retry by itself: a transient database
 * fault is a warning (it heals on its own), anything else an error (someone should look).
 */
export function retriedFailureLevel(err: unknown): "warn" | "error" {
  return isTransientDatabaseError(err) ? "warn" : "error";
}
