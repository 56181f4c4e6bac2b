import type { FastifyContextConfig, FastifySchema } from "fastify";
import type { ErrorCode } from "../../domain/errors.js";
import { codeToStatus } from "../errors.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * Error codes this route answers beyond those its other settings imply (`impliedErrorCodes`):
     * what its handler and services throw, e.g. `INVALID_STATE`, `INSUFFICIENT_BALANCE`,
     * `CHAIN_UNAVAILABLE`. Only the OpenAPI document reads it.
     */
    errors?: readonly ErrorCode[];
  }
}

/** Whether the route takes an `Idempotency-Key` (its schema declares the header). */
export function isIdempotent(schema: FastifySchema | undefined): boolean {
  const headers = schema?.headers as { properties?: Record<string, unknown> } | undefined;
  return headers?.properties?.["idempotency-key"] !== undefined;
}

/**
 * The codes every route with these settings can answer, whatever its handler does: the rate
 * limiter, the database (a transient fault: 503), input validation, authentication and
 * authorization, path parameters naming an object, Idempotency-Key handling, the step-up check.
 */
export function impliedErrorCodes(
  config: FastifyContextConfig,
  schema: FastifySchema | undefined,
): ErrorCode[] {
  const codes: ErrorCode[] = ["INTERNAL_ERROR"];
  if (config.tier !== false) codes.push("RATE_LIMITED", "SERVICE_UNAVAILABLE");
  if (schema?.body || schema?.querystring || schema?.params || schema?.headers || config.stepUp) {
    codes.push("VALIDATION_ERROR");
  }
  if (config.auth) codes.push("INVALID_AUTH", "FORBIDDEN");
  if (schema?.params || config.sandboxOnly) codes.push("NOT_FOUND");
  if (isIdempotent(schema)) codes.push("IDEMPOTENCY_CONFLICT", "IDEMPOTENCY_MISMATCH");
  return codes;
}

/** The route's error codes grouped by HTTP status (`codeToStatus`, the one mapping), in order. */
export function routeErrorsByStatus(
  config: FastifyContextConfig,
  schema: FastifySchema | undefined,
): [status: number, codes: ErrorCode[]][] {
  const codes = new Set([...impliedErrorCodes(config, schema), ...(config.errors ?? [])]);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = codeToStatus(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return [...byStatus.entries()].sort(([a], [b]) => a - b);
}
