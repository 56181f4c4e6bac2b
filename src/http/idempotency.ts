import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
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
} from "../idempotency/index.js";
import type { Principal } from "./context.js";

/** How long a key's response is kept and replayed (CONTRACT §4: 24 h). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * What `idempotentCreate` needs: the database, the clock, and `leaseMs` (`IDEMPOTENCY_LEASE_SECONDS`):
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
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * Runs a creating POST once per `Idempotency-Key` (CONTRACT §4), the way Stripe does: the same
 * key with the same body replays the stored response (status and bytes, with
 * `Idempotent-Replayed: true`); a different body is 422 IDEMPOTENCY_MISMATCH; the first request
 * still running is 409 IDEMPOTENCY_CONFLICT. `run` gets the transaction in which the stored
 * response is written, so "created" and "remembered" commit together. A request that fails with an
 * error stores nothing: retrying with the same key is allowed. Without the header, `run` simply
 * runs in a transaction.
 *
 * `options.beforeRun` is what only a request that will really run may do, outside the transaction
 * (a payout spends its single-use OTP): it is skipped for a replay, a mismatch and a request in
 * flight, so a retried payout gets its stored answer instead of "this code was already used".
 *
 * `options.singleWrite`: `run` writes with ONE statement (atomic by itself) and reads nothing it
 * needs isolated, so without the header it runs on the pool without BEGIN/COMMIT — two round trips
 * fewer on the hottest creating path (checkout sessions). With the header it still runs in the
 * transaction that stores the response.
 */
export async function idempotentCreate(
  ctx: IdempotencyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  who: Principal,
  status: number,
  run: (trx: Db) => Promise<unknown>,
  options: { beforeRun?: () => Promise<void>; singleWrite?: boolean } = {},
): Promise<FastifyReply> {
  // The body is serialised here (with the route's response schema) so that a replay sends the same bytes.
  return reply.send(await respond(ctx, request, reply, who, status, run, options));
}

async function respond(
  ctx: IdempotencyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  who: Principal,
  status: number,
  run: (trx: Db) => Promise<unknown>,
  { beforeRun, singleWrite }: { beforeRun?: () => Promise<void>; singleWrite?: boolean },
): Promise<string> {
  const header = request.headers["idempotency-key"];
  reply.code(status).type("application/json; charset=utf-8");
  if (header === undefined) {
    await beforeRun?.();
    if (singleWrite) return serialize(reply, await run(ctx.db));
    return ctx.db.transaction().execute(async (trx) => serialize(reply, await run(trx)));
  }
  if (typeof header !== "string" || !KEY_PATTERN.test(header)) {
    throw AppError.validation([
      { field: "Idempotency-Key", message: "must be 1 to 255 printable ASCII characters without spaces" },
    ]);
  }
  const scope: IdempotencyScope = { merchantId: who.merchantId, environment: who.environment, key: header };
  const now = ctx.clock.now();
  let claim: Awaited<ReturnType<typeof claimIdempotencyKey>>;
  try {
    claim = await claimIdempotencyKey(ctx.db, scope, requestHash(request), {
      now: new Date(now),
      retainedSince: new Date(now - IDEMPOTENCY_RETENTION_MS),
      abandonedBefore: new Date(now - ctx.leaseMs),
    });
  } catch (err) {
    // The claim's COMMIT may have gone through: then the key would stay `running` (409 for the
    // client's retry) until its lease ran out. Nothing ran under it yet, so it is given up.
    if (err instanceof CommitOutcomeUnknownError) await release(request, ctx, scope, new Date(now));
    throw err;
  }
  switch (claim.kind) {
    case "replay":
      reply.code(claim.status).header("idempotent-replayed", "true");
      return claim.body;
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
  const stopHeartbeat = heartbeat(ctx, request, scope, claimedAt);
  try {
    await beforeRun?.();
    return await ctx.db.transaction().execute(async (trx) => {
      const body = serialize(reply, await run(trx));
      if (!(await completeIdempotencyKey(trx, scope, claimedAt, { status, body }))) {
        // Stalled past the lease and taken over: this request's work rolls back with the transaction.
        throw new AppError(
          "IDEMPOTENCY_CONFLICT",
          "Another request with this Idempotency-Key took over while this one was stalled; retry for its answer.",
        );
      }
      return body;
    });
  } catch (err) {
    stopHeartbeat();
    await release(request, ctx, scope, claimedAt);
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
  request: FastifyRequest,
  ctx: IdempotencyContext,
  scope: IdempotencyScope,
  claimedAt: Date,
): Promise<void> {
  try {
    await retryTransient(() => releaseIdempotencyKey(ctx.db, scope, claimedAt));
  } catch (err) {
    request.log.warn({ err }, "idempotency claim not released; it lapses with its lease");
  }
}

/**
 * Renews the claim's lease every third of it until stopped (the answer stored or the request
 * failed) or until the claim is found lost. A renewal that fails (a database hiccup) is logged and
 * tried again at the next beat: the lease outlasts two missed beats. Returns the stop function.
 */
function heartbeat(
  ctx: IdempotencyContext,
  request: FastifyRequest,
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
          if (!stopped)
            request.log.warn({ err }, "idempotency claim renewal failed; retrying at the next beat");
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

/** The route's response serializer for the status set on the reply (unknown fields never leak). */
function serialize(reply: FastifyReply, payload: unknown): string {
  const body = reply.serialize(payload);
  return typeof body === "string" ? body : Buffer.from(body as ArrayBuffer).toString("utf8");
}

/** What makes two requests "the same": method, route and the body's JSON with keys in a stable order. */
function requestHash(request: FastifyRequest): string {
  return createHash("sha256")
    .update(`${request.method} ${request.routeOptions.url ?? request.url}\n${canonicalJson(request.body)}`)
    .digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
