import { Type } from "@sinclair/typebox";
import { formatAmount } from "../../domain/money.js";
import { presentTransaction } from "../../domain/transaction.js";
import { getBalances } from "../../ledger/index.js";
import { dailyVolume, getTransaction, listTransactions } from "../../transactions/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { listParams, pagination } from "../list.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { BalanceSchema, presentBalance } from "../schemas/balance.js";
import { commonErrors, list, ok } from "../schemas/common.js";
import { CurrencyTypeSchema, TransactionSchema } from "../schemas/transaction.js";
import { TransactionsQuery, transactionFilter } from "../transaction-query.js";

/**
 * The dashboard-channel versions of the account reads (docs/api-reference.md#dashboard): the
 * dashboard session (cookie or Bearer) and its `X-Environment` instead of an API key — same data,
 * same schemas, same repositories as `/api/v1/public/balance` and `/transactions`. Plus the volume
 * series behind the dashboard's overview chart. (The admin's cross-merchant views are in `admin.ts`.)
 */

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

const VolumeQuery = Type.Object({
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })),
});

const VolumePoint = Type.Object(
  {
    date: Type.String({ format: "date", description: "UTC day" }),
    currencyType: CurrencyTypeSchema,
    incoming: Type.Number({ description: "Credited by confirmed deposits, in the token" }),
    outgoing: Type.Number({ description: "Sent by completed withdrawals and payouts, in the token" }),
    count: Type.Integer({ description: "Transactions counted in this day" }),
  },
  { title: "VolumePoint" },
);

export function dashboardReadRoutes(app: App, { database, clock, chains }: RouteDeps) {
  const db = database.db;
  const cfg = { auth: "dashboard", tier: "dashboard", permission: "money:read" } as const;

  app.get(
    "/api/v1/dashboard/balance",
    {
      config: cfg,
      schema: {
        summary: "Balances per currency type (the dashboard's environment)",
        tags: ["Dashboard"],
        response: { 200: ok(Type.Array(BalanceSchema), { title: "BalanceListResponse" }), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const balances = await getBalances(db, p.merchantId, p.environment, chains.enabledCurrencyTypes());
      return {
        success: true as const,
        data: balances.map(presentBalance),
      };
    },
  );

  app.get(
    "/api/v1/dashboard/transactions",
    {
      config: cfg,
      schema: {
        summary: "List deposits, withdrawals and payouts (the dashboard's environment)",
        tags: ["Dashboard"],
        querystring: TransactionsQuery,
        response: { 200: list(TransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const params = listParams(request.query);
      const { rows, total } = await listTransactions(db, p, transactionFilter(request.query), params);
      return {
        success: true as const,
        data: rows.map(presentTransaction),
        pagination: pagination(params, total),
      };
    },
  );

  app.get(
    "/api/v1/dashboard/transactions/:id",
    {
      config: cfg,
      schema: {
        summary: "One transaction (the dashboard's environment)",
        tags: ["Dashboard"],
        params: IdParams,
        response: { 200: ok(TransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const tx = await getTransaction(db, p, request.params.id);
      return { success: true as const, data: presentTransaction(tx) };
    },
  );

  app.get(
    "/api/v1/dashboard/volume",
    {
      config: cfg,
      schema: {
        summary: "Daily volume of the last `days` days (UTC) per currency type, for the overview chart",
        description:
          "Days without movement are left out. Incoming: confirmed deposits (what was credited); " +
          "outgoing: completed withdrawals and payouts; each counted on the day it was confirmed.",
        tags: ["Dashboard"],
        querystring: VolumeQuery,
        response: { 200: ok(Type.Array(VolumePoint), { title: "VolumeResponse" }), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const days = request.query.days ?? 30;
      const volume = await dailyVolume(db, p, days, new Date(clock.now()));
      return {
        success: true as const,
        data: volume.map((v) => ({
          date: v.date,
          currencyType: v.currencyType,
          incoming: formatAmount(v.incoming),
          outgoing: formatAmount(v.outgoing),
          count: v.count,
        })),
      };
    },
  );
}
