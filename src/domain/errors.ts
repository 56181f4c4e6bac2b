/**
 * The closed list of error codes (docs/merchants/errors.md#codes). The domain raises `AppError` with one of these;
 * `src/http/errors.ts` is the only place that maps a code to an HTTP status.
 */
export const ERROR_CODES = [
  "VALIDATION_ERROR",
  "INVALID_AUTH",
  "FORBIDDEN",
  "NOT_FOUND",
  "INVALID_STATE",
  "IDEMPOTENCY_CONFLICT",
  "IDEMPOTENCY_MISMATCH",
  "INSUFFICIENT_BALANCE",
  // 422: a withdrawal or payout destination the token's issuer froze or the screening provider
  // refused (`details.reason`: `token_blacklist` or `screening`), refused before anything is held.
  "DESTINATION_BLOCKED",
  "CHAIN_UNAVAILABLE",
  // 503 with Retry-After: a checkout session priced in fiat while the exchange rate source has no
  // rate within EXCHANGE_RATE_MAX_AGE_SECONDS (docs/decisions/prices.md); nothing was created.
  "RATE_UNAVAILABLE",
  // 503 with Retry-After: a transient fault of the database (a lost connection, a failover, a
  // deadlock) that its retries did not get past. Nothing of the request stands unless its commit's
  // outcome was unknown, and then a retry with the same Idempotency-Key replays it.
  "SERVICE_UNAVAILABLE",
  // 429 with Retry-After, in the contract's rate-limit body (`{ success: false, message }`, plus the
  // `error` object every other error has): a throttle decided in the domain (failed sign-ins), or the
  // per-tier limiter.
  "RATE_LIMITED",
  "INTERNAL_ERROR",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "AppError";
  }

  static validation(fields: FieldError[], message = "The request is invalid."): AppError {
    return new AppError("VALIDATION_ERROR", message, { fields });
  }

  static invalidAuth(message = "Missing or invalid credentials."): AppError {
    return new AppError("INVALID_AUTH", message);
  }

  static forbidden(message: string): AppError {
    return new AppError("FORBIDDEN", message);
  }

  static notFound(message = "Not found."): AppError {
    return new AppError("NOT_FOUND", message);
  }

  static serviceUnavailable(): AppError {
    return new AppError("SERVICE_UNAVAILABLE", "The service is briefly unavailable; retry shortly.");
  }

  static rateLimited(message: string, retryAfterSeconds: number): AppError {
    return new AppError("RATE_LIMITED", message, { retryAfterSeconds });
  }
}
