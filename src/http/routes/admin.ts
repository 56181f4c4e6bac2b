import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { presentTransaction, type TransactionRecord } from "../../domain/transaction.js";
import { type AdminMerchantView, getMerchantForAdmin, listMerchantsForAdmin } from "../../merchants/index.js";
import { getAnyTransaction, listTransactionsAcrossMerchants } from "../../transactions/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { adminPrincipal } from "../plugins/dashboard-auth.js";
import { commonErrors, list, ok } from "../schemas/common.js";
import { TransactionSchema } from "../schemas/transaction.js";
import { TransactionFilterFields, transactionFilter } from "../transaction-query.js";

const AdminMerchant = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    companyName: Type.String(),
    status: Type.Union([Type.Literal("active"), Type.Literal("suspended")]),
    createdAt: Type.String({ format: "date-time" }),
    activeApiKeys: Type.Object({ production: Type.Integer(), sandbox: Type.Integer() }),
  },
  { title: "AdminMerchant" },
);

const AdminTransactionsQuery = Type.Composite([
  ListQuerySchema,
  Type.Object({
    ...TransactionFilterFields,
    merchantId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    environment: Type.Optional(Type.Union([Type.Literal("production"), Type.Literal("sandbox")])),
  }),
]);

const AdminTransactionSchema = Type.Composite(
  [
    TransactionSchema,
    Type.Object({
      merchantId: Type.String(),
      environment: Type.Union([Type.Literal("production"), Type.Literal("sandbox")]),
    }),
  ],
  { title: "AdminTransaction" },
);

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

function adminTransactionView(r: TransactionRecord) {
  return { ...presentTransaction(r), merchantId: r.merchantId, environment: r.environment };
}

function adminMerchantView(m: AdminMerchantView) {
  return { ...m, createdAt: m.createdAt.toISOString() };
}

/**
 * `/api/v1/admin/*` (docs/api-reference.md#admin): read-only views across merchants for the platform operator's
 * admin accounts. Every route declares `audience: "admin"`, so the dashboard verifier admits admin
 * accounts only, and only for reads, whatever spelling of the path the router matched; each
 * handler asks again (`adminPrincipal`). Any write answers 403 (this catch-all makes every write
 * path exist so it does so even for paths without a read).
 */
export function adminRoutes(app: App, { database }: RouteDeps) {
  const db = database.db;
  const cfg = { auth: "dashboard", audience: "admin", tier: "dashboard" } as const;

  app.get(
    "/api/v1/admin/merchants",
    {
      config: cfg,
      schema: {
        summary: "Admin: list merchants",
        tags: ["Admin"],
        querystring: ListQuerySchema,
        response: { 200: list(AdminMerchant), ...commonErrors },
      },
    },
    async (request) => {
      adminPrincipal(request);
      const params = listParams(request.query);
      const { rows, total } = await listMerchantsForAdmin(db, params);
      return {
        success: true as const,
        data: rows.map(adminMerchantView),
        pagination: pagination(params, total),
      };
    },
  );

  app.get(
    "/api/v1/admin/merchants/:id",
    {
      config: cfg,
      schema: {
        summary: "Admin: one merchant",
        tags: ["Admin"],
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        response: { 200: ok(AdminMerchant), ...commonErrors },
      },
    },
    async (request) => {
      adminPrincipal(request);
      const m = await getMerchantForAdmin(db, request.params.id);
      return { success: true as const, data: adminMerchantView(m) };
    },
  );

  app.get(
    "/api/v1/admin/transactions",
    {
      config: cfg,
      schema: {
        summary: "Admin: transactions across merchants (filter by merchantId, environment and the usual)",
        tags: ["Admin"],
        querystring: AdminTransactionsQuery,
        response: { 200: list(AdminTransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      adminPrincipal(request);
      const q = request.query;
      const params = listParams(q);
      const { rows, total } = await listTransactionsAcrossMerchants(
        db,
        { merchantId: q.merchantId, environment: q.environment },
        transactionFilter(q),
        params,
      );
      return {
        success: true as const,
        data: rows.map(adminTransactionView),
        pagination: pagination(params, total),
      };
    },
  );

  app.get(
    "/api/v1/admin/transactions/:id",
    {
      config: cfg,
      schema: {
        summary: "Admin: one transaction of any merchant",
        tags: ["Admin"],
        params: IdParams,
        response: { 200: ok(AdminTransactionSchema), ...commonErrors },
      },
    },
    async (request) => {
      adminPrincipal(request);
      const t = await getAnyTransaction(db, request.params.id);
      return { success: true as const, data: adminTransactionView(t) };
    },
  );

  // Admin is read-only: every write under /api/v1/admin/* is refused (after authentication).
  app.route({
    method: ["POST", "PUT", "PATCH", "DELETE"],
    url: "/api/v1/admin/*",
    config: cfg,
    schema: { hide: true },
    handler: async (request) => {
      adminPrincipal(request);
      throw AppError.forbidden("Admin access is read-only.");
    },
  });
}
