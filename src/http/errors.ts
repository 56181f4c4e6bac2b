import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ChainUnavailableError } from "../chains/index.js";
import { isTransientDatabaseError } from "../db/transient.js";
import { AppError, type ErrorCode, type FieldError } from "../domain/errors.js";
import { rateLimitedBody } from "./plugins/rate-limit.js";

/** Why a request was refused (4xx), for its one log line (`app.ts`, "request completed"). */
const rejections = new WeakMap<FastifyRequest, { code: string; message: string }>();

export function rejectionOf(request: FastifyRequest): { code: string; message: string } | undefined {
  return rejections.get(request);
}

/** `Retry-After` of a 503 SERVICE_UNAVAILABLE: a failover or a reconnect takes about this long. */
export const SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS = 1;
/** `Retry-After` of a 503 RATE_UNAVAILABLE: a ticker's next request is due within this (docs/decisions/prices.md). */
export const RATE_UNAVAILABLE_RETRY_AFTER_SECONDS = 30;

/** The one mapping from error code to HTTP status (docs/merchants/errors.md#codes). Exhaustive by construction. */
export function codeToStatus(code: ErrorCode): number {
  switch (code) {
    case "VALIDATION_ERROR":
      return 400;
    case "INVALID_AUTH":
      return 401;
    case "FORBIDDEN":
      return 403;
    case "NOT_FOUND":
      return 404;
    case "INVALID_STATE":
    case "IDEMPOTENCY_CONFLICT":
      return 409;
    case "IDEMPOTENCY_MISMATCH":
    case "INSUFFICIENT_BALANCE":
    case "DESTINATION_BLOCKED":
      return 422;
    case "RATE_LIMITED":
      return 429;
    case "CHAIN_UNAVAILABLE":
    case "RATE_UNAVAILABLE":
    case "SERVICE_UNAVAILABLE":
      return 503;
    case "INTERNAL_ERROR":
      return 500;
  }
}

/** The error envelope (docs/merchants/errors.md#the-envelope): `requestId` equals the response's `X-Request-Id`. */
export function errorBody(err: AppError, requestId: string) {
  return {
    success: false as const,
    error: { code: err.code, message: err.message, details: err.details, requestId },
  };
}

interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Turns schema-validation issues into `details.fields` entries with plain field names. */
export function fieldErrors(issues: AjvIssue[], part: string | undefined): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const issue of issues) {
    let field = issue.instancePath
      .split("/")
      .filter(Boolean)
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
      .join(".");
    if (issue.keyword === "required" && typeof issue.params.missingProperty === "string") {
      field = field ? `${field}.${issue.params.missingProperty}` : issue.params.missingProperty;
    } else if (
      issue.keyword === "additionalProperties" &&
      typeof issue.params.additionalProperty === "string"
    ) {
      field = field ? `${field}.${issue.params.additionalProperty}` : issue.params.additionalProperty;
    }
    if (!field) field = part ?? "body";
    const message =
      issue.keyword === "required"
        ? "is required"
        : issue.keyword === "additionalProperties"
          ? "is not a known field"
          : issue.keyword === "enum" && Array.isArray(issue.params.allowedValues)
            ? // The allowed values, not "must be equal to one of the allowed values" (issue #35).
              `must be one of: ${issue.params.allowedValues.map(String).join(", ")}`
            : (issue.message ?? "is invalid");
    const key = `${field}|${message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push({ field, message });
    }
  }
  return out;
}

/** Translates anything thrown during a request into an AppError. Unknown errors become INTERNAL_ERROR. */
export function toAppError(err: unknown, bodyLimit: number): AppError {
  if (err instanceof AppError) return err;
  // A chain's endpoint failed under a request (a fee quote, a sandbox payment): the client may retry.
  if (err instanceof ChainUnavailableError) {
    return new AppError("CHAIN_UNAVAILABLE", `${err.network} is not reachable; try again later.`);
  }
  // Retried already where that was safe (db/retrying-kysely.ts): the client may try again.
  if (isTransientDatabaseError(err)) return AppError.serviceUnavailable();
  const fe = err as Partial<FastifyError> & { validation?: AjvIssue[]; validationContext?: string };
  if (Array.isArray(fe.validation)) {
    return AppError.validation(fieldErrors(fe.validation, fe.validationContext));
  }
  switch (fe.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return AppError.validation(
        [{ field: "body", message: `must be at most ${bodyLimit} bytes` }],
        "Request body too large.",
      );
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return AppError.validation(
        [{ field: "Content-Type", message: "must be application/json" }],
        "Unsupported Content-Type; send application/json.",
      );
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return AppError.validation([{ field: "body", message: "must be valid JSON" }], "Malformed JSON body.");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return AppError.validation([{ field: "Content-Length", message: "does not match the body" }]);
  }
  if (err instanceof SyntaxError && fe.statusCode === 400) {
    return AppError.validation([{ field: "body", message: "must be valid JSON" }], "Malformed JSON body.");
  }
  // Other client errors raised by Fastify itself (bad headers, aborted bodies, ...).
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    if (fe.statusCode === 404) return AppError.notFound();
    return AppError.validation([{ field: "request", message: "is malformed" }], "Malformed request.");
  }
  return new AppError("INTERNAL_ERROR", "Internal server error.");
}

export function makeErrorHandler(bodyLimit: number) {
  return function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply) {
    // A route may declare its own body limit (the logo upload): the message names the one that applied.
    const appErr = toAppError(err, request.routeOptions?.bodyLimit ?? bodyLimit);
    const status = codeToStatus(appErr.code);
    if (appErr.code === "SERVICE_UNAVAILABLE") {
      // A fault of the moment (the database), not a bug: warn, and tell the client when to retry.
      request.log.warn({ err, code: appErr.code }, "request failed on a transient database fault");
      reply.header("Retry-After", String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS));
    } else if (appErr.code === "RATE_UNAVAILABLE") {
      // The rate provider's fault, expected now and then: a warning, and when to retry.
      request.log.warn({ code: appErr.code, details: appErr.details }, "no fresh exchange rate");
      reply.header("Retry-After", String(RATE_UNAVAILABLE_RETRY_AFTER_SECONDS));
    } else if (status >= 500) {
      request.log.error({ err, code: appErr.code }, "request failed");
    } else {
      // Not a line of its own: the request's one "request completed" line carries it.
      rejections.set(request, { code: appErr.code, message: appErr.message });
    }
    if (appErr.code === "RATE_LIMITED") {
      // A 429 has the contract's own body (`message`, plus the shared `error` object) and Retry-After.
      const retryAfter = Number(appErr.details.retryAfterSeconds);
      reply.header(
        "Retry-After",
        String(Number.isFinite(retryAfter) ? Math.max(1, Math.ceil(retryAfter)) : 60),
      );
      return reply.code(429).send(rateLimitedBody(appErr.message, request.id, appErr.details));
    }
    return reply.code(status).send(errorBody(appErr, request.id));
  };
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return reply
    .code(404)
    .send(
      errorBody(AppError.notFound(`No route ${request.method} ${request.url.split("?")[0]}.`), request.id),
    );
}

/**
 * Errors the router raises before any route or hook runs (Fastify's `frameworkErrors`): a path
 * that is not valid percent-encoding, a path parameter longer than the router's limit.
 */
export function frameworkErrorHandler(maxParamLength: number) {
  return function onFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const appErr =
      err.code === "FST_ERR_BAD_URL"
        ? AppError.validation([{ field: "path", message: "is not valid percent-encoding" }], "Malformed URL.")
        : err.code === "FST_ERR_MAX_PARAM_LENGTH"
          ? AppError.validation(
              [{ field: "path", message: `has a segment longer than ${maxParamLength} characters` }],
              "Malformed URL.",
            )
          : new AppError("INTERNAL_ERROR", "Internal server error.");
    const status = codeToStatus(appErr.code);
    if (status >= 500) request.log.error({ err }, "request failed in the router");
    reply.header("X-Request-Id", request.id);
    reply.header("X-Content-Type-Options", "nosniff");
    return reply.code(status).send(errorBody(appErr, request.id));
  };
}
