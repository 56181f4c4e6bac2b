import { type SelectQueryBuilder, sql } from "kysely";
import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import type { DB } from "../db/schema.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { ListParams } from "../domain/list.js";
import type { TransactionRecord, TransactionStatus, TransactionType } from "../domain/transaction.js";
import { toRecord } from "./records.js";

/** The lists of transactions: a merchant's (both channels) and the platform admin's across merchants. */

export interface TransactionFilter {
  type?: TransactionType | undefined;
  status?: TransactionStatus | undefined;
  currencyType?: CurrencyType | undefined;
  /** Literal text: `%`, `_`, `\`, `.*`, `(` … match only themselves. */
  search?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

const SORT_COLUMNS = {
  createdAt: "created_at",
  updatedAt: "updated_at",
  amount: "amount",
  status: "status",
  confirmedAt: "confirmed_at",
} as const;

/** Escapes LIKE metacharacters so the text is matched literally (with `escape '\'`). */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

type TransactionsQuery = SelectQueryBuilder<DB, "transactions", object>;

/** The filter's conditions on a transactions query. */
function filtered(q: TransactionsQuery, filter: TransactionFilter): TransactionsQuery {
  if (filter.type) q = q.where("type", "=", filter.type);
  if (filter.status) q = q.where("status", "=", filter.status);
  if (filter.currencyType) q = q.where("currency_type", "=", filter.currencyType);
  if (filter.from) q = q.where("created_at", ">=", filter.from);
  if (filter.to) q = q.where("created_at", "<", filter.to);
  if (filter.search) {
    q = q.where(
      sql<boolean>`search_text like ${`%${likeLiteral(filter.search.toLowerCase())}%`} escape '\\'`,
    );
  }
  return q;
}

/** The rows of a page, in the page's order (`id` last: pages never overlap). */
function ordered(page: ListParams) {
  return (q: TransactionsQuery) =>
    q.selectAll().orderBy(SORT_COLUMNS[page.sortBy], page.order).orderBy("id", page.order);
}

/** A merchant's transactions in an environment, filtered (not yet paged; the export pages it by keyset). */
export function merchantTransactions(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  filter: TransactionFilter,
): TransactionsQuery {
  const q = db
    .selectFrom("transactions")
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment);
  return filtered(q, filter);
}

/**
 * The two queries `listTransactions` runs through `paginate` (the page and the total), for
 * `scripts/explain-transactions.ts` to EXPLAIN.
 */
export function transactionListQueries(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  filter: TransactionFilter,
  page: ListParams,
) {
  const q = merchantTransactions(db, scope, filter);
  return {
    rows: ordered(page)(q).limit(page.limit).offset(page.offset),
    count: q.select(sql<string>`count(*)`.as("n")),
  };
}

/** One page of a merchant's transactions in an environment, and the filter's total. */
export async function listTransactions(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  filter: TransactionFilter,
  page: ListParams,
): Promise<{ rows: TransactionRecord[]; total: number }> {
  const { rows, total } = await paginate(merchantTransactions(db, scope, filter), page, ordered(page));
  return { rows: rows.map(toRecord), total };
}

/**
 * Transactions across merchants, for the platform admin's read-only views: the same filters, plus
 * an optional merchant and environment. Never used on a merchant's behalf (those lists are scoped
 * by `listTransactions`).
 */
export async function listTransactionsAcrossMerchants(
  db: Db,
  scope: { merchantId?: string | undefined; environment?: Environment | undefined },
  filter: TransactionFilter,
  page: ListParams,
): Promise<{ rows: TransactionRecord[]; total: number }> {
  let q: TransactionsQuery = db.selectFrom("transactions");
  if (scope.merchantId) q = q.where("merchant_id", "=", scope.merchantId);
  if (scope.environment) q = q.where("environment", "=", scope.environment);
  const { rows, total } = await paginate(filtered(q, filter), page, ordered(page));
  return { rows: rows.map(toRecord), total };
}
