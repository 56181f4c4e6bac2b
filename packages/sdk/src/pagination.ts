import type { Page } from "./types.js";

/** Largest page the API serves (docs/api-reference.md#pagination); iterating asks for it to make fewer requests. */
export const MAX_PAGE_SIZE = 100;

/**
 * Every item of a list, page after page, fetched lazily as the loop asks for more: stops after the
 * last page (`page >= totalPages`) or at an empty page. Starts at `params.page` (default 1).
 *
 * A list is read page by page, not as a snapshot: items created while iterating may shift the
 * pages (under the default `createdAt desc` order a new item pushes the others one place back, so
 * an item can be seen twice). Sort `asc` to read a growing list, or deduplicate on `id`.
 */
export async function* iteratePages<T, P extends { page?: number; limit?: number }>(
  list: (params: P) => Promise<Page<T>>,
  params: P,
): AsyncGenerator<T, void, undefined> {
  let page = params.page ?? 1;
  const limit = params.limit ?? MAX_PAGE_SIZE;
  for (;;) {
    const result = await list({ ...params, page, limit });
    yield* result.data;
    if (result.data.length === 0 || page >= result.pagination.totalPages) return;
    page++;
  }
}
