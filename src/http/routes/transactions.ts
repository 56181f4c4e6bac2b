import { Type } from "@sinclair/typebox";
import { presentTransaction } from "../../domain/transaction.js";
import { getTransaction, listTransactions } from "../../transactions/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { listParams, pagination } from "../list.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { commonErrors, list, ok } from "../schemas/common.js";
import { TransactionSchema } from "../schemas/transaction.js";
import { TransactionsQuery, transactionFilter } from "../transaction-query.js";

/** `GET /api/v1/public/transactions` and `/transactions/{id}` (docs/api-reference.md#listtransactions). */
export function transactionRoutes(app: App, { database }: RouteDeps) {
  app.get(
    "/api/v1/public/transactions",
    {
      config: { auth: "apiKey", tier: "standard", permission: "money:read" },
      schema: {
        summary: "List deposits, withdrawals and payouts",
        tags: ["Transactions"],
        querystring: TransactionsQuery,
        response: { 200: list(TransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      const params = listParams(request.query);
      const { rows, total } = await listTransactions(
        database.db,
        p,
        transactionFilter(request.query),
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
      config: { auth: "apiKey", tier: "standard", permission: "money:read" },
      schema: {
        summary: "One transaction",
        tags: ["Transactions"],
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: ok(TransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      const tx = await getTransaction(database.db, p, request.params.id);
      return { success: true as const, data: presentTransaction(tx) };
    },
  );
}
