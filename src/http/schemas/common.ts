import { type Static, type TSchema, Type } from "@sinclair/typebox";

/**
 * The envelopes every route shares, declared once. A schema with a `title` becomes a named
 * component of the OpenAPI document (`src/http/openapi/hoist.ts`), so titles name types that
 * merchants' generated clients will see: keep them stable.
 */

export const FieldErrorSchema = Type.Object(
  {
    field: Type.String({ description: "The field, as a dotted path (`amount`, `metadata.x`, `body`)" }),
    message: Type.String({ description: "What is wrong with it" }),
  },
  { title: "FieldError", description: "One refused field of a request" },
);

/**
 * The error envelope as the server serialises it. The OpenAPI document does not show this loose
 * shape: it declares, per status, the exact error shapes the route can answer
 * (`src/http/openapi/error-schemas.ts`).
 */
export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Object({}, { additionalProperties: true }),
      requestId: Type.String(),
    }),
  },
  { description: "Error envelope" },
);

/** A 429 of the rate limiter: the contract's `{ success: false, message }`, plus the shared `error` object. */
export const RateLimitedEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    message: Type.String(),
    error: Type.Optional(
      Type.Object({
        code: Type.String(),
        message: Type.String(),
        details: Type.Object({}, { additionalProperties: true }),
        requestId: Type.String(),
      }),
    ),
  },
  { description: "Rate limit exceeded" },
);

/** The keyword `documentedAs` uses; only the OpenAPI document reads it (openapi/hoist.ts). */
/** A schema that may also be `null`. */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) =>
  Type.Union([t, Type.Null()]);

export const DOCUMENTED_AS = "x-documented-as";

/**
 * `runtime` validates and serialises; the document shows `documented` in its place (with the
 * runtime schema's description). For data served as stored whose documented shape is stricter
 * than what old rows may hold (the serialiser would refuse or drop what does not fit).
 */
export function documentedAs<D extends TSchema>(runtime: TSchema, documented: D) {
  return Type.Unsafe<Static<D>>({ ...runtime, [DOCUMENTED_AS]: documented });
}

interface EnvelopeOptions {
  /** Component name of the envelope; by default the data schema's title + `Response`. */
  title?: string;
  /** Description of the success response. */
  description?: string;
}

const named = (title: string | undefined, description: string | undefined) => ({
  ...(title ? { title } : {}),
  ...(description ? { description } : {}),
});

/** `{ success: true, data }`. */
export function ok<T extends TSchema>(data: T, options: EnvelopeOptions = {}) {
  const title = options.title ?? (typeof data.title === "string" ? `${data.title}Response` : undefined);
  return Type.Object({ success: Type.Literal(true), data }, named(title, options.description));
}

export const PaginationSchema = Type.Object(
  {
    page: Type.Integer({ minimum: 1, description: "This page, from 1" }),
    limit: Type.Integer({ minimum: 1, description: "Items per page" }),
    total: Type.Integer({ minimum: 0, description: "Items matching the filters, on all pages" }),
    totalPages: Type.Integer({ minimum: 0 }),
  },
  { title: "Pagination", examples: [{ page: 1, limit: 20, total: 42, totalPages: 3 }] },
);

/** `{ success: true, data: [...], pagination }`: one page of a list. */
export function list<T extends TSchema>(item: T, options: EnvelopeOptions = {}) {
  const title = options.title ?? (typeof item.title === "string" ? `${item.title}ListResponse` : undefined);
  return Type.Object(
    { success: Type.Literal(true), data: Type.Array(item), pagination: PaginationSchema },
    named(title, options.description),
  );
}

/**
 * The error responses every API route can give; merged into each route's `response` (for the
 * serialiser). The document replaces them with the codes the route really answers.
 */
export const commonErrors = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  404: ErrorEnvelope,
  429: RateLimitedEnvelope,
  500: ErrorEnvelope,
} as const;
