import { type TSchema, Type } from "@sinclair/typebox";

/** Envelopes of CONTRACT §2, declared once and reused by every route. */

export const FieldErrorSchema = Type.Object({ field: Type.String(), message: Type.String() });

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Object({}, { additionalProperties: true }),
    }),
  },
  { $id: undefined, description: "Error envelope (CONTRACT §2)" },
);

export const RateLimitedEnvelope = Type.Object(
  { success: Type.Literal(false), message: Type.String() },
  { description: "Rate limit exceeded (SPEC §7)" },
);

export function ok<T extends TSchema>(data: T) {
  return Type.Object({ success: Type.Literal(true), data });
}

export const PaginationSchema = Type.Object({
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer(),
  totalPages: Type.Integer(),
});

export function list<T extends TSchema>(item: T) {
  return Type.Object({ success: Type.Literal(true), data: Type.Array(item), pagination: PaginationSchema });
}

/** The error responses every API route can give; merged into each route's `response`. */
export const commonErrors = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  404: ErrorEnvelope,
  429: RateLimitedEnvelope,
  500: ErrorEnvelope,
} as const;
