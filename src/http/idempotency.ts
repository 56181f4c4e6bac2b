import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../domain/errors.js";
import type { IdempotentAnswer, IdempotentCall, IdempotentRequest } from "../idempotency/index.js";
import type { Principal } from "./context.js";

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * How a creating route asks to be answered (docs/merchants/idempotency.md; the protocol itself is
 * `idempotency/run.ts`, run by the use case): its `Idempotency-Key` and request hash, and
 * `present` serialised with the route's response schema, so that a replay sends the same bytes.
 * The same key with the same body replays the stored response (status and bytes, with
 * `Idempotent-Replayed: true`); a different body is 422 IDEMPOTENCY_MISMATCH; the first request
 * still running is 409 IDEMPOTENCY_CONFLICT. The one shape of every creating route:
 * `sendAnswer(reply, await useCase(deps, who, input, idempotentCall(request, reply, who, 201, present)))`.
 */
export function idempotentCall<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  who: Principal,
  status: number,
  present: (result: T) => unknown,
): IdempotentCall<T> {
  return {
    idempotency: () => idempotentRequest(request, reply, who, status),
    answer: (result) => serialize(reply, present(result)),
  };
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
