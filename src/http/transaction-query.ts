import { Type } from "@sinclair/typebox";
import { AppError } from "../domain/errors.js";
import type { TransactionFilter } from "../transactions/index.js";
import { ListQuerySchema } from "./list.js";
import { CurrencyTypeSchema, TransactionStatusSchema, TransactionTypeSchema } from "./schemas/transaction.js";

/** The filters of every transaction list (docs/api-reference.md#listtransactions), on both channels and for the admin. */
export const TransactionFilterFields = {
  type: Type.Optional(TransactionTypeSchema),
  status: Type.Optional(TransactionStatusSchema),
  currencyType: Type.Optional(CurrencyTypeSchema),
  search: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: "Literal text; never a pattern" }),
  ),
  from: Type.Optional(Type.String({ format: "date-time", description: "createdAt ≥ from" })),
  to: Type.Optional(Type.String({ format: "date-time", description: "createdAt < to" })),
};

/** The query of `GET …/transactions`: list conventions plus the filters. */
export const TransactionsQuery = Type.Composite([ListQuerySchema, Type.Object(TransactionFilterFields)]);

type FilterQuery = { from?: string; to?: string } & Omit<TransactionFilter, "from" | "to">;

/** `from`/`to` of a validated query as dates; `from` after `to` is a 400. */
export function dateRange(q: { from?: string | undefined; to?: string | undefined }) {
  const from = q.from ? new Date(q.from) : undefined;
  const to = q.to ? new Date(q.to) : undefined;
  if (from && to && from > to)
    throw AppError.validation([{ field: "from", message: "must not be after to" }]);
  return { from, to };
}

/** The repository filter of a validated query; `from` after `to` is a 400. */
export function transactionFilter(q: FilterQuery): TransactionFilter {
  return { type: q.type, status: q.status, currencyType: q.currencyType, search: q.search, ...dateRange(q) };
}
