/** The response headers the document declares (components.headers), and which response has which. */

export const RESPONSE_HEADERS = {
  "X-Request-Id": {
    description:
      "Identifies this request in the service's logs: yours when you sent a well-formed `X-Request-Id`, " +
      "else generated. Quote it when asking about a request.",
    schema: { type: "string" },
  },
  "RateLimit-Limit": {
    description: "Requests allowed per window in this route's tier.",
    schema: { type: "integer", minimum: 1 },
  },
  "RateLimit-Remaining": {
    description: "Requests left in the current window.",
    schema: { type: "integer", minimum: 0 },
  },
  "RateLimit-Reset": {
    description: "Seconds until the window frees capacity.",
    schema: { type: "integer", minimum: 0 },
  },
  "RateLimit-Policy": {
    description: "The tier's limit and window in seconds, e.g. `100;w=900`.",
    schema: { type: "string" },
  },
  "Retry-After": {
    description: "Seconds to wait before retrying.",
    schema: { type: "integer", minimum: 1 },
  },
  Location: {
    description: "Where to continue: a redirect's target (a path on this service).",
    schema: { type: "string" },
  },
  "Idempotent-Replayed": {
    description:
      "`true` when this is the stored answer of an earlier request with the same Idempotency-Key " +
      "(nothing was created again).",
    schema: { type: "string", enum: ["true"] },
  },
} as const;

export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS;

/** The headers of one response of an operation. */
export function headersOf(
  status: number,
  route: { rateLimited: boolean; idempotent: boolean },
): Record<string, { $ref: string }> {
  const names: ResponseHeaderName[] = ["X-Request-Id"];
  if (route.rateLimited)
    names.push("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy");
  if (status === 429 || status === 503) names.push("Retry-After");
  if (status >= 300 && status < 400) names.push("Location");
  if (route.idempotent && status >= 200 && status < 300) names.push("Idempotent-Replayed");
  return Object.fromEntries(names.map((n) => [n, { $ref: `#/components/headers/${n}` }]));
}
