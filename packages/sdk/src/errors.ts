/**
 * Errors as classes chosen by the API's `error.code` (docs/merchants/errors.md#codes), so callers branch with
 * `instanceof` instead of comparing strings. Every error the SDK throws is a {@link StablegateError}.
 */

/** The `error.code` values the API answers with; other strings may appear in later versions. */
export type ErrorCode =
  | "VALIDATION_ERROR"
  | "INVALID_AUTH"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "INVALID_STATE"
  | "IDEMPOTENCY_CONFLICT"
  | "IDEMPOTENCY_MISMATCH"
  | "INSUFFICIENT_BALANCE"
  | "RATE_LIMITED"
  | "CHAIN_UNAVAILABLE"
  | "RATE_UNAVAILABLE"
  | "SERVICE_UNAVAILABLE"
  | "INTERNAL_ERROR";

/** What the SDK itself reports: no answer, no answer in time, a webhook that does not verify. */
export type ClientErrorCode = "CONNECTION_ERROR" | "TIMEOUT" | "WEBHOOK_VERIFICATION_FAILED";

export interface StablegateErrorInit {
  message: string;
  code: ErrorCode | ClientErrorCode | (string & {});
  /** HTTP status; `undefined` when no answer arrived. */
  status?: number | undefined;
  details?: Record<string, unknown>;
  requestId?: string | undefined;
  headers?: Headers | undefined;
  cause?: unknown;
}

export class StablegateError extends Error {
  readonly code: ErrorCode | ClientErrorCode | (string & {});
  readonly status: number | undefined;
  readonly details: Record<string, unknown>;
  /** `X-Request-Id` of the answer: quote it to the operator, it finds the request in the logs. */
  readonly requestId: string | undefined;
  readonly headers: Headers | undefined;

  constructor(init: StablegateErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? {};
    this.requestId = init.requestId;
    this.headers = init.headers;
  }
}

export interface FieldError {
  field: string;
  message: string;
}

function fieldsOf(details: Record<string, unknown> | undefined): FieldError[] {
  const raw = details?.fields;
  return Array.isArray(raw)
    ? raw
        .filter((f): f is Record<string, unknown> => typeof f === "object" && f !== null)
        .map((f) => ({ field: String(f.field ?? ""), message: String(f.message ?? "") }))
    : [];
}

/**
 * 400 VALIDATION_ERROR: `fields` says which input was refused and why; so does the message
 * ("Validation failed: currencyType must be one of: …"), for a log line or an uncaught error.
 */
export class ValidationError extends StablegateError {
  readonly fields: FieldError[];
  constructor(init: StablegateErrorInit) {
    const fields = fieldsOf(init.details);
    const reasons = fields.map((f) => `${f.field} ${f.message}`).join("; ");
    super({ ...init, message: reasons ? `${init.message.replace(/\.$/, "")}: ${reasons}` : init.message });
    this.fields = fields;
  }
}

/** 401 INVALID_AUTH: missing or wrong key, wrong `x-api-secret`, or the secret missing where required. */
export class AuthenticationError extends StablegateError {}
/** 403 FORBIDDEN: a key of the other environment, an IP outside the allowlist, a revoked key pair. */
export class PermissionError extends StablegateError {}
/** 404 NOT_FOUND. */
export class NotFoundError extends StablegateError {}
/** 409 INVALID_STATE: e.g. approving a withdrawal that is no longer `pending`. */
export class InvalidStateError extends StablegateError {}
/** 422 INSUFFICIENT_BALANCE: a withdrawal larger than the available balance. */
export class InsufficientBalanceError extends StablegateError {}
/** 409 IDEMPOTENCY_CONFLICT or 422 IDEMPOTENCY_MISMATCH. */
export class IdempotencyError extends StablegateError {}
/** 409: a request with this Idempotency-Key is still running. */
export class IdempotencyConflictError extends IdempotencyError {}
/** 422: this Idempotency-Key was used with another request body. */
export class IdempotencyMismatchError extends IdempotencyError {}

/** 429: the rate limit of the route's tier; `retryAfter` in seconds when the server said. */
export class RateLimitError extends StablegateError {
  readonly retryAfter: number | undefined;
  constructor(init: StablegateErrorInit & { retryAfter?: number | undefined }) {
    super(init);
    this.retryAfter = init.retryAfter;
  }
}

/** 503 SERVICE_UNAVAILABLE (a transient fault of the gateway: retry after `Retry-After`). */
export class ServiceUnavailableError extends StablegateError {}
/** 503 CHAIN_UNAVAILABLE: the chain is not configured or not reachable. */
export class ChainUnavailableError extends ServiceUnavailableError {}
/** 503 RATE_UNAVAILABLE: a price in fiat while the gateway has no fresh exchange rate (retry after `Retry-After`). */
export class RateUnavailableError extends ServiceUnavailableError {}
/** 500 INTERNAL_ERROR or another 5xx: quote `requestId` to the operator. */
export class InternalServerError extends StablegateError {}

/** No answer: DNS, refused or dropped connection. The request may or may not have been processed. */
export class ConnectionError extends StablegateError {}
/** No answer within `timeoutMs`. The request may or may not have been processed. */
export class TimeoutError extends ConnectionError {}

const BY_CODE: Record<ErrorCode, new (init: StablegateErrorInit) => StablegateError> = {
  VALIDATION_ERROR: ValidationError,
  INVALID_AUTH: AuthenticationError,
  FORBIDDEN: PermissionError,
  NOT_FOUND: NotFoundError,
  INVALID_STATE: InvalidStateError,
  IDEMPOTENCY_CONFLICT: IdempotencyConflictError,
  IDEMPOTENCY_MISMATCH: IdempotencyMismatchError,
  INSUFFICIENT_BALANCE: InsufficientBalanceError,
  RATE_LIMITED: RateLimitError,
  CHAIN_UNAVAILABLE: ChainUnavailableError,
  RATE_UNAVAILABLE: RateUnavailableError,
  SERVICE_UNAVAILABLE: ServiceUnavailableError,
  INTERNAL_ERROR: InternalServerError,
};

/** When the body names no code (a proxy's page, an unknown code), the status decides. */
function classForStatus(status: number): new (init: StablegateErrorInit) => StablegateError {
  if (status === 400) return ValidationError;
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionError;
  if (status === 404) return NotFoundError;
  if (status === 503) return ServiceUnavailableError;
  if (status >= 500) return InternalServerError;
  return StablegateError;
}

const STATUS_CODES: Record<number, string> = {
  400: "VALIDATION_ERROR",
  401: "INVALID_AUTH",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  503: "SERVICE_UNAVAILABLE",
};

/**
 * The error of a non-2xx answer. Accepts the error envelope `{ success:false, error:{ code,
 * message, details } }`, the 429 body `{ success:false, message }` (with or without `error`), and
 * anything else (a proxy's HTML page) by its status.
 */
export function errorFromResponse(
  status: number,
  headers: Headers,
  body: unknown,
  retryAfter: number | undefined,
): StablegateError {
  const envelope = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  const error =
    typeof envelope.error === "object" && envelope.error !== null
      ? (envelope.error as Record<string, unknown>)
      : undefined;
  const code =
    typeof error?.code === "string"
      ? error.code
      : status === 429
        ? "RATE_LIMITED"
        : (STATUS_CODES[status] ?? (status >= 500 ? "INTERNAL_ERROR" : `HTTP_${status}`));
  const message =
    typeof error?.message === "string"
      ? error.message
      : typeof envelope.message === "string"
        ? envelope.message
        : `HTTP ${status}`;
  const details =
    typeof error?.details === "object" && error.details !== null
      ? (error.details as Record<string, unknown>)
      : {};
  const init = {
    message,
    code,
    status,
    details,
    requestId:
      headers.get("x-request-id") ?? (typeof error?.requestId === "string" ? error.requestId : undefined),
    headers,
  };
  if (status === 429 || code === "RATE_LIMITED") return new RateLimitError({ ...init, retryAfter });
  const Class = (BY_CODE as Record<string, (typeof BY_CODE)[ErrorCode]>)[code] ?? classForStatus(status);
  return new Class(init);
}
