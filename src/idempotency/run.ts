import type { Db } from "../db/database.js";
import { CommitOutcomeUnknownError, retryTransient } from "../db/transient.js";
import { AppError } from "../domain/errors.js";
import type { Clock } from "../lib/clock.js";
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  type IdempotencyScope,
  releaseIdempotencyKey,
  renewIdempotencyClaim,
} from "./keys.js";

/** How long a key's response is kept and replayed (docs/merchants/idempotency.md: 24 h). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * What an idempotent run needs: the database, the clock, and `leaseMs` (`IDEMPOTENCY_LEASE_SECONDS`):
 * a `running` claim not renewed for this long belongs to a request that died before committing
 * (the claim and the operation's result are written together, so a finished request is never
 * `running`). A live request renews its claim every third of the lease, so however long it runs
 * the key stays 409 for the others; a dead one's claim is taken over once the lease has passed.
 */
export interface IdempotencyContext {
  db: Db;
  clock: Clock;
  leaseMs: number;
}

/** The work of a creating request, in the transaction (or on the pool) it is given. */
export type IdempotentWork<T> = (trx: Db) => Promise<T>;

/** A creating request, as the channel that received it describes it. */
export interface IdempotentRequest {
  /** The key's scope and what makes two requests "the same"; null without an `Idempotency-Key`. */
  keyed: { scope: IdempotencyScope; requestHash: string } | null;
  /** The status of the answer the run gives (stored with its body for a replay). */
  status: number;
  /** Where a claim that could not be released or renewed is reported. */
  log: { warn(obj: { err: unknown }, msg: string): void };
}

/**
 * How the channel that received a creating request wants it answered — the one shape every
 * creating use case takes (issue #36): the use case runs its checks, then `runIdempotent` with
 * `idempotency()` (read only once the checks passed) and turns its result into the stored bytes
 * with `answer` (what a retry with the same key replays).
 */
export interface IdempotentCall<T> {
  idempotency: () => IdempotentRequest;
  answer: (result: T) => string;
}

/** The answer: a fresh run's body, or the stored answer of the key's first request. */
export type IdempotentAnswer =
  | { kind: "ran"; body: string }
  | { kind: "replay"; status: number; body: string };

export interface IdempotentOptions {
  /**
   * What only a request that will really run may do, outside the transaction (a payout spends its
   * single-use OTP): skipped for a replay, a mismatch and a request in flight.
   */
  beforeRun?: () => Promise<void>;
  /**
   * `run` writes with ONE statement (atomic by itself) and reads nothing it needs isolated, so
   * without a key it runs on the pool without BEGIN/COMMIT. With a key it still runs in the
   * transaction that stores the answer.
   */
  singleWrite?: boolean;
}

/**
 * Runs a creating request once per `Idempotency-Key` (docs/merchants/idempotency.md), the way Stripe does: the same
 * key with the same request replays the stored answer; a different request is 422
 * IDEMPOTENCY_MISMATCH; the first request still running is 409 IDEMPOTENCY_CONFLICT. `run` gets
 * the transaction in which its answer (the body it returns) is stored, so "created" and
 * "remembered" commit together. A request that fails with an error stores nothing: retrying with
 * the same key is allowed. Without a key, `run` simply runs in a transaction.
 */
export async function runIdempotent(
  ctx: IdempotencyContext,
  req: IdempotentRequest,
  run: IdempotentWork<string>,
  { beforeRun, singleWrite }: IdempotentOptions = {},
): Promise<IdempotentAnswer> {
  if (req.keyed === null) {
    await beforeRun?.();
    if (singleWrite) return { kind: "ran", body: await run(ctx.db) };
    return { kind: "ran", body: await ctx.db.transaction().execute(run) };
  }
  const { scope, requestHash } = req.keyed;
  const now = ctx.clock.now();
  let claim: Awaited<ReturnType<typeof claimIdempotencyKey>>;
  try {
    claim = await claimIdempotencyKey(ctx.db, scope, requestHash, {
      now: new Date(now),
      retainedSince: new Date(now - IDEMPOTENCY_RETENTION_MS),
      abandonedBefore: new Date(now - ctx.leaseMs),
    });
  } catch (err) {
    // The claim's COMMIT may have gone through: then the key would stay `running` (409 for the
    // client's retry) until its lease ran out. Nothing ran under it yet, so it is given up.
    if (err instanceof CommitOutcomeUnknownError) await release(ctx, req.log, scope, new Date(now));
    throw err;
  }
  switch (claim.kind) {
    case "replay":
      return { kind: "replay", status: claim.status, body: claim.body };
    case "mismatch":
      throw new AppError(
        "IDEMPOTENCY_MISMATCH",
        "This Idempotency-Key was used with a different request; use a new key for a new request.",
      );
    case "in_flight":
      throw new AppError(
        "IDEMPOTENCY_CONFLICT",
        "A request with this Idempotency-Key is still being processed; retry shortly.",
      );
    case "claimed":
      break;
  }
  const { claimedAt } = claim;
  const stopHeartbeat = heartbeat(ctx, req.log, scope, claimedAt);
  try {
    await beforeRun?.();
    const body = await ctx.db.transaction().execute(async (trx) => {
      const body = await run(trx);
      if (!(await completeIdempotencyKey(trx, scope, claimedAt, { status: req.status, body }))) {
        // Stalled past the lease and taken over: this request's work rolls back with the transaction.
        throw new AppError(
          "IDEMPOTENCY_CONFLICT",
          "Another request with this Idempotency-Key took over while this one was stalled; retry for its answer.",
        );
      }
      return body;
    });
    return { kind: "ran", body };
  } catch (err) {
    stopHeartbeat();
    await release(ctx, req.log, scope, claimedAt);
    throw err;
  } finally {
    stopHeartbeat();
  }
}

/**
 * Frees the claim of a request that failed, so that the client's retry runs at once (a 503 on a
 * database fault says "retry"; a key left `running` would answer 409 until its lease ran out). The
 * release is fenced by `claimedAt` and idempotent, so it is retried on a transient fault; if the
 * database stays away, the lease frees the key later and the request's own error is what the client
 * gets. After a COMMIT of unknown outcome it is right either way: a committed request's key is
 * `done` and is left alone.
 */
async function release(
  ctx: IdempotencyContext,
  log: IdempotentRequest["log"],
  scope: IdempotencyScope,
  claimedAt: Date,
): Promise<void> {
  try {
    await retryTransient(() => releaseIdempotencyKey(ctx.db, scope, claimedAt));
  } catch (err) {
    log.warn({ err }, "idempotency claim not released; it lapses with its lease");
  }
}

/**
 * Renews the claim's lease every third of it until stopped (the answer stored or the request
 * failed) or until the claim is found lost. A renewal that fails (a database hiccup) is logged and
 * tried again at the next beat: the lease outlasts two missed beats. Returns the stop function.
 */
function heartbeat(
  ctx: IdempotencyContext,
  log: IdempotentRequest["log"],
  scope: IdempotencyScope,
  claimedAt: Date,
): () => void {
  let stopped = false;
  let renewing = false;
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  const timer = setInterval(
    () => {
      if (stopped || renewing) return;
      renewing = true;
      renewIdempotencyClaim(ctx.db, scope, claimedAt, new Date(ctx.clock.now()))
        .then((held) => {
          if (!held) stop();
        })
        .catch((err: unknown) => {
          if (!stopped) log.warn({ err }, "idempotency claim renewal failed; retrying at the next beat");
        })
        .finally(() => {
          renewing = false;
        });
    },
    Math.max(1, Math.floor(ctx.leaseMs / 3)),
  );
  // Never what keeps a process alive (a stopping server waits for its requests, not for this).
  timer.unref();
  return stop;
}
