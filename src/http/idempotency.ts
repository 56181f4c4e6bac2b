import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../domain/errors.js";
import {
  type IdempotencyContext,
  type IdempotentAnswer,
  type IdempotentOptions,
  type IdempotentRequest,
  type IdempotentWork,
  runIdempotent,
} from "../idempotency/index.js";
import type { Principal } from "./context.js";

export { IDEMPOTENCY_RETENTION_MS, type IdempotencyContext } from "../idempotency/index.js";

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * Runs a creating POST once per `Idempotency-Key` (CONTRACT §4; the protocol itself is
 * `idempotency/run.ts`): the same key with the same body replays the stored response (status and
 * bytes, with `Idempotent-Replayed: true`); a different body is 422 IDEMPOTENCY_MISMATCH; the first
 * request still running is 409 IDEMPOTENCY_CONFLICT. `run` gets the transaction in which the stored
 * response is written, so "created" and "remembered" commit together. A request that fails with an
 * error stores nothing: retrying with the same key is allowed. Without the header, `run` simply
 * runs in a transaction.
 *
 * `options.beforeRun` is what only a request that will really run may do, outside the transaction:
 * it is skipped for a replay, a mismatch and a request in flight. `options.singleWrite`: `run`
 * writes with ONE statement, so without the header it runs on the pool without BEGIN/COMMIT.
 */
export async function idempotentCreate(
  ctx: IdempotencyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  who: Principal,
  status: number,
  run: IdempotentWork<unknown>,
  options: IdempotentOptions = {},
): Promise<FastifyReply> {
  const req = idempotentRequest(request, reply, who, status);
  // The body is serialised here (with the route's response schema) so that a replay sends the same bytes.
  const answer = await runIdempotent(ctx, req, async (trx) => serialize(reply, await run(trx)), options);
  return sendAnswer(reply, answer);
}

/**
 * The creating request as the idempotency feature sees it: its `Idempotency-Key` (validated) and
 * its hash. Sets the reply's status and type (the route's response serializer depends on them).
 */
export function idempotentRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  who: Principal,
  status: number,
): IdempotentRequest {
  const header = request.headers["idempotency-key"];
  reply.code(status).type("application/json; charset=utf-8");
  if (header === undefined) return { keyed: null, status, log: request.log };
  if (typeof header !== "string" || !KEY_PATTERN.test(header)) {
    throw AppError.validation([
      { field: "Idempotency-Key", message: "must be 1 to 255 printable ASCII characters without spaces" },
    ]);
  }
  return {
    keyed: {
      scope: { merchantId: who.merchantId, environment: who.environment, key: header },
      requestHash: requestHash(request),
    },
    status,
    log: request.log,
  };
}

/** Sends a fresh answer, or a replayed one with its stored status and `Idempotent-Replayed: true`. */
export function sendAnswer(reply: FastifyReply, answer: IdempotentAnswer): FastifyReply {
  if (answer.kind === "replay") reply.code(answer.status).header("idempotent-replayed", "true");
  return reply.send(answer.body);
}

/** The route's response serializer for the status set on the reply (unknown fields never leak). */
export function serialize(reply: FastifyReply, payload: unknown): string {
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
