import { type TObject, type TSchema, Type } from "@sinclair/typebox";
import type { ErrorCode } from "../../domain/errors.js";
import { FieldErrorSchema } from "../schemas/common.js";

/**
 * The error bodies as the document declares them: one named shape per error code, each with its
 * `code` fixed and its `details` typed, so a generated client narrows on `error.code`. What the
 * server sends is `errorBody` / `rateLimitedBody` (`http/errors.ts`, `plugins/rate-limit.ts`);
 * test/sdk/openapi-client.test.ts validates real answers against these.
 */

const NAMES: Record<ErrorCode, string> = {
  VALIDATION_ERROR: "ValidationError",
  INVALID_AUTH: "InvalidAuthError",
  FORBIDDEN: "ForbiddenError",
  NOT_FOUND: "NotFoundError",
  INVALID_STATE: "InvalidStateError",
  IDEMPOTENCY_CONFLICT: "IdempotencyConflictError",
  IDEMPOTENCY_MISMATCH: "IdempotencyMismatchError",
  INSUFFICIENT_BALANCE: "InsufficientBalanceError",
  DESTINATION_BLOCKED: "DestinationBlockedError",
  CHAIN_UNAVAILABLE: "ChainUnavailableError",
  RATE_UNAVAILABLE: "RateUnavailableError",
  SERVICE_UNAVAILABLE: "ServiceUnavailableError",
  RATE_LIMITED: "RateLimitedError",
  INTERNAL_ERROR: "InternalError",
};

/** What each code means for the caller, and what to do about it. */
export const ERROR_MEANINGS: Record<ErrorCode, string> = {
  VALIDATION_ERROR:
    "The request is invalid; `details.fields` names each refused field. Fix it, do not retry as is.",
  INVALID_AUTH: "Missing or wrong credentials (API key, secret, or dashboard session).",
  FORBIDDEN:
    "The credentials are valid but not for this: a key of the other environment, an address outside " +
    "the IP allowlist, a suspended account, or a read-only account.",
  NOT_FOUND: "No such object in this environment (or not yours).",
  INVALID_STATE:
    "The object is not in a state that allows this (e.g. approving a withdrawal that is no longer pending).",
  IDEMPOTENCY_CONFLICT:
    "A request with this Idempotency-Key is still running; retry with the same key in a moment.",
  IDEMPOTENCY_MISMATCH: "This Idempotency-Key was used with a different request body; use a new key.",
  INSUFFICIENT_BALANCE: "The available balance is lower than the amount; `details` has both.",
  DESTINATION_BLOCKED:
    "The destination is frozen by the token's issuer (`details.reason`: `token_blacklist`) or refused by the " +
    "screening provider (`screening`); nothing was held. Ask the end user for another address.",
  CHAIN_UNAVAILABLE:
    "The network of this currency type is not available in this environment right now; retry later.",
  RATE_UNAVAILABLE:
    "A price in fiat was given while the gateway has no fresh exchange rate for its currency; nothing was " +
    "created. Retry after `Retry-After` seconds (with the same Idempotency-Key), or give `amount` in the token.",
  SERVICE_UNAVAILABLE:
    "A brief fault of the service; nothing was done. Retry after `Retry-After` seconds (with the same Idempotency-Key).",
  RATE_LIMITED: "Too many requests in the window; retry after `Retry-After` seconds.",
  INTERNAL_ERROR: "An unexpected error; the `X-Request-Id` of the response identifies it in the logs.",
};

const Empty = Type.Object({}, { additionalProperties: false, description: "Always empty" });

const DETAILS: Record<Exclude<ErrorCode, "RATE_LIMITED">, TObject> = {
  VALIDATION_ERROR: Type.Object({ fields: Type.Array(FieldErrorSchema) }),
  INVALID_AUTH: Type.Object({
    totpRequired: Type.Optional(
      Type.Boolean({ description: "Sign-in only: the account has 2FA on and `totp` is needed" }),
    ),
  }),
  FORBIDDEN: Empty,
  NOT_FOUND: Empty,
  INVALID_STATE: Type.Object({
    status: Type.Optional(Type.String({ description: "The object's current status, when it has one" })),
  }),
  IDEMPOTENCY_CONFLICT: Empty,
  IDEMPOTENCY_MISMATCH: Empty,
  INSUFFICIENT_BALANCE: Type.Object({
    available: Type.Number({ description: "The available balance, in USDT" }),
    required: Type.Number({ description: "What the request needs, in USDT" }),
  }),
  DESTINATION_BLOCKED: Type.Object({
    reason: Type.Union([Type.Literal("token_blacklist"), Type.Literal("screening")], {
      description:
        "`token_blacklist`: the token's issuer froze the address; `screening`: the screening provider refused it",
    }),
    message: Type.Optional(Type.String({ description: "The screening provider's reason, when it gave one" })),
  }),
  CHAIN_UNAVAILABLE: Type.Object({
    network: Type.Optional(Type.String()),
    environment: Type.Optional(Type.String()),
  }),
  RATE_UNAVAILABLE: Type.Object({
    currency: Type.Optional(Type.String({ description: "The priceCurrency that has no fresh rate" })),
    source: Type.Optional(Type.String({ description: "The exchange rate source (EXCHANGE_RATE_SOURCE)" })),
  }),
  SERVICE_UNAVAILABLE: Empty,
  INTERNAL_ERROR: Empty,
};

function errorObject(code: ErrorCode, details: TSchema) {
  return Type.Object({
    code: Type.Literal(code),
    message: Type.String({ description: "For people; may change. Branch on `code`." }),
    details,
    requestId: Type.String({
      description: "Equals the response's `X-Request-Id`: quote it to the operator (it names the log lines).",
    }),
  });
}

const RateLimitedErrorSchema = Type.Object(
  {
    success: Type.Literal(false),
    message: Type.String({ description: "Same text as `error.message`" }),
    error: errorObject(
      "RATE_LIMITED",
      Type.Object({
        retryAfterSeconds: Type.Optional(Type.Number({ description: "Same as the Retry-After header" })),
      }),
    ),
  },
  { title: NAMES.RATE_LIMITED, description: ERROR_MEANINGS.RATE_LIMITED },
);

const shapes = new Map<ErrorCode, TSchema>();

/** The body of an error with this code (one object per code: the document names it once). */
export function errorShape(code: ErrorCode): TSchema {
  let shape = shapes.get(code);
  if (!shape) {
    shape =
      code === "RATE_LIMITED"
        ? RateLimitedErrorSchema
        : Type.Object(
            { success: Type.Literal(false), error: errorObject(code, DETAILS[code]) },
            { title: NAMES[code], description: ERROR_MEANINGS[code] },
          );
    shapes.set(code, shape);
  }
  return shape;
}

/** The body of a response with these codes: their shape, or any of them (`anyOf`: the shapes differ only in the nested `error.code`, which no discriminator can name). */
export function errorBodySchema(codes: readonly ErrorCode[]): TSchema {
  const [only] = codes;
  if (codes.length === 1 && only) return errorShape(only);
  return { anyOf: codes.map(errorShape) } as unknown as TSchema;
}
