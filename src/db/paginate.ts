import { type SelectQueryBuilder, sql } from "kysely";

/** The window of a list page (`domain/list.ts` computes it from `page`/`limit`). */
export interface PageWindow {
  limit: number;
  offset: number;
}

/**
 * The one way a list is read: a page of a filtered query (`rowsOf` selects and orders it, with a
 * unique last sort column so pages never overlap) and the total of the same filter, run together.
 */
export async function paginate<DB, TB extends keyof DB, O, R>(
  filtered: SelectQueryBuilder<DB, TB, O>,
  page: PageWindow,
  rowsOf: (q: SelectQueryBuilder<DB, TB, O>) => SelectQueryBuilder<DB, TB, R>,
): Promise<{ rows: R[]; total: number }> {
  const [rows, count] = await Promise.all([
    rowsOf(filtered).limit(page.limit).offset(page.offset).execute(),
    filtered.select(sql<string>`count(*)`.as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as R[], total: Number((count as { n: string }).n) };
}
