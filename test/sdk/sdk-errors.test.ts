import { describe, expect, it } from "vitest";
import { errorFromResponse } from "../../packages/sdk/src/errors.js";
import {
  AuthenticationError,
  InternalServerError,
  RateLimitError,
  ServiceUnavailableError,
  StablegateError,
  ValidationError,
} from "../../packages/sdk/src/index.js";
import { retryDelayMs, serverDelaySeconds, shouldRetry } from "../../packages/sdk/src/retry.js";

// The parts of the SDK that answers of the real service do not all reach (other bodies a proxy or
// an older/newer gateway may send); everything else is tested against the service in the other files.
describe("errorFromResponse", () => {
  const headers = new Headers({ "x-request-id": "req-1" });

  it("a 429 with or without the error object is a RateLimitError", () => {
    const bare = errorFromResponse(429, headers, { success: false, message: "API rate limit exceeded" }, 7);
    const withError = errorFromResponse(
      429,
      headers,
      {
        success: false,
        message: "slow down",
        error: { code: "RATE_LIMITED", message: "slow down", details: {} },
      },
      3,
    );
    for (const [err, retryAfter] of [
      [bare, 7],
      [withError, 3],
    ] as const) {
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err).toMatchObject({ status: 429, code: "RATE_LIMITED", requestId: "req-1", retryAfter });
    }
    expect(bare.message).toBe("API rate limit exceeded");
  });

  it("a validation error's message names each refused field and why; requestId from the body when no header", () => {
    const err = errorFromResponse(
      400,
      new Headers(),
      {
        success: false,
        error: {
          code: "VALIDATION_ERROR",
          message: "Request validation failed.",
          details: {
            fields: [
              { field: "currencyType", message: "must be one of: USDT-TRC20, USDT-ERC20" },
              { field: "amount", message: "is required" },
            ],
          },
          requestId: "req_abc",
        },
      },
      undefined,
    );
    expect(err.message).toBe(
      "Request validation failed: currencyType must be one of: USDT-TRC20, USDT-ERC20; amount is required",
    );
    expect(err.requestId).toBe("req_abc");
  });

  it("a body that is not the envelope (a proxy's page) is classed by its status", () => {
    expect(errorFromResponse(502, headers, undefined, undefined)).toBeInstanceOf(InternalServerError);
    expect(errorFromResponse(503, headers, undefined, 1)).toBeInstanceOf(ServiceUnavailableError);
    expect(errorFromResponse(401, headers, "<html>", undefined)).toBeInstanceOf(AuthenticationError);
    const teapot = errorFromResponse(418, headers, undefined, undefined);
    expect(teapot.constructor).toBe(StablegateError);
    expect(teapot.code).toBe("HTTP_418");
  });

  it("an unknown code keeps its code and falls back to the status's class; malformed fields are dropped safely", () => {
    const err = errorFromResponse(
      400,
      headers,
      {
        success: false,
        error: { code: "SOMETHING_NEW", message: "m", details: { fields: [null, { field: "a" }] } },
      },
      undefined,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.code).toBe("SOMETHING_NEW");
    expect((err as ValidationError).fields).toEqual([{ field: "a", message: "" }]);
  });
});

describe("retry policy", () => {
  it("Retry-After in seconds or as an HTTP date, else RateLimit-Reset", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(serverDelaySeconds(new Headers({ "retry-after": "5" }), now)).toBe(5);
    expect(serverDelaySeconds(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:09 GMT" }), now)).toBe(9);
    expect(serverDelaySeconds(new Headers({ "ratelimit-reset": "12" }), now)).toBe(12);
    expect(serverDelaySeconds(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
  });

  it("waits at least what the server said; backoff doubles and is capped, with jitter", () => {
    const backoff = { initialDelayMs: 500, maxDelayMs: 8000 };
    expect(retryDelayMs(0, 2, backoff, () => 0)).toBe(2000);
    expect(retryDelayMs(0, 2, backoff, () => 1)).toBe(2200);
    expect(retryDelayMs(0, undefined, backoff, () => 1)).toBe(500);
    expect(retryDelayMs(0, undefined, backoff, () => 0)).toBe(250);
    expect(retryDelayMs(3, undefined, backoff, () => 1)).toBe(4000);
    expect(retryDelayMs(10, undefined, backoff, () => 1)).toBe(8000);
  });

  it("repeats only what is safe to repeat", () => {
    const safe = "safe" as const;
    const unsafe = "unsafe" as const;
    expect(shouldRetry({ safety: unsafe, status: 429, code: "RATE_LIMITED" })).toBe(true);
    expect(shouldRetry({ safety: unsafe, status: 503, code: "SERVICE_UNAVAILABLE" })).toBe(false);
    expect(shouldRetry({ safety: unsafe, status: undefined, code: "CONNECTION_ERROR" })).toBe(false);
    expect(shouldRetry({ safety: safe, status: 503, code: "SERVICE_UNAVAILABLE" })).toBe(true);
    expect(shouldRetry({ safety: safe, status: undefined, code: "TIMEOUT" })).toBe(true);
    expect(shouldRetry({ safety: safe, status: 409, code: "IDEMPOTENCY_CONFLICT" })).toBe(true);
    expect(shouldRetry({ safety: safe, status: 409, code: "INVALID_STATE" })).toBe(false);
    expect(shouldRetry({ safety: safe, status: 500, code: "INTERNAL_ERROR" })).toBe(false);
    expect(shouldRetry({ safety: safe, status: 400, code: "VALIDATION_ERROR" })).toBe(false);
  });
});
