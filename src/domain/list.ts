/**
 * List conventions of docs/api-reference.md#pagination: `page` ≥ 1 (default 1), `limit` 1..100 (default 20, above 100
 * capped, not an error), `sortBy` from a fixed set with any other value falling back to
 * `createdAt`, `order` asc|desc (default desc).
 */
export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 20;
export const SORT_FIELDS = ["createdAt", "updatedAt", "amount", "status", "confirmedAt"] as const;
export type SortField = (typeof SORT_FIELDS)[number];

export interface ListParams {
  page: number;
  limit: number;
  offset: number;
  sortBy: SortField;
  order: "asc" | "desc";
}

export function listParams(q: {
  page?: number | undefined;
  limit?: number | undefined;
  sortBy?: string | undefined;
  order?: "asc" | "desc" | undefined;
}): ListParams {
  const page = q.page ?? 1;
  const limit = Math.min(q.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
  const sortBy = (SORT_FIELDS as readonly string[]).includes(q.sortBy ?? "")
    ? (q.sortBy as SortField)
    : "createdAt";
  return { page, limit, offset: (page - 1) * limit, sortBy, order: q.order ?? "desc" };
}

export function pagination(params: ListParams, total: number) {
  return { page: params.page, limit: params.limit, total, totalPages: Math.ceil(total / params.limit) };
}
