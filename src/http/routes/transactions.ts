import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { presentTransaction } from "../../domain/transaction.js";
import { findTransaction, listTransactions } from "../../repositories/transactions.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { commonErrors, list, ok } from "../schemas/common.js";
import {
  CurrencyTypeSchema,
  TransactionSchema,
  TransactionStatusSchema,
  TransactionTypeSchema,
} from "../schemas/transaction.js";

const TransactionsQuery = Type.Composite([
  ListQuerySchema,
  Type.Object({
    type: Type.Optional(TransactionTypeSchema),
    status: Type.Optional(TransactionStatusSchema),
    currencyType: Type.Optional(CurrencyTypeSchema),
    search: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: "Literal text; never a pattern" }),
    ),
    from: Type.Optional(Type.String({ format: "date-time", description: "createdAt ≥ from" })),
    to: Type.Optional(Type.String({ format: "date-time", description: "createdAt < to" })),
  }),
]);

/** `GET /api/v1/public/transactions` and `/transactions/{id}` (CONTRACT §4.4). */
export function transactionRoutes(app: App, { database }: RouteDeps) {
  app.get(
    "/api/v1/public/transactions",
    {
      config: { auth: "apiKey", tier: "standard" },
      schema: {
        summary: "List deposits, withdrawals and payouts",
        tags: ["Transactions"],
        querystring: TransactionsQuery,
        response: { 200: list(TransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      const q = request.query;
      const from = q.from ? new Date(q.from) : undefined;
      const to = q.to ? new Date(q.to) : undefined;
      if (from && to && from > to)
        throw AppError.validation([{ field: "from", message: "must not be after to" }]);
      const params = listParams(q);
      const { rows, total } = await listTransactions(
        database.db,
        p,
        { type: q.type, status: q.status, currencyType: q.currencyType, search: q.search, from, to },
        params,
      );
      return {
        success: true as const,
        data: rows.map(presentTransaction),
        pagination: pagination(params, total),
      };
    },
  );

  app.get(
    "/api/v1/public/transactions/:id",
    {
      config: { auth: "apiKey", tier: "standard" },
      schema: {
        summary: "One transaction",
        tags: ["Transactions"],
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: ok(TransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      const tx = await findTransaction(database.db, p, request.params.id);
      if (!tx) throw AppError.notFound("No such transaction.");
      return { success: true as const, data: presentTransaction(tx) };
    },
  );
}
