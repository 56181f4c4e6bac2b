import { Type } from "@sinclair/typebox";
import type { Db } from "../../db/database.js";
import { AppError } from "../../domain/errors.js";
import { presentTransaction } from "../../domain/transaction.js";
import { listTransactionsAcrossMerchants, toRecord } from "../../transactions/index.js";
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

function adminTransactionView(r: ReturnType<typeof toRecord>) {
  return { ...presentTransaction(r), merchantId: r.merchantId, environment: r.environment };
}

async function merchantsView(db: Db, ids: string[]) {
  if (ids.length === 0) return new Map<string, { production: number; sandbox: number }>();
  const counts = await db
    .selectFrom("api_keys")
    .select(["merchant_id", "environment", (eb) => eb.fn.countAll<string>().as("n")])
    .where("merchant_id", "in", ids)
    .where("status", "=", "active")
    .groupBy(["merchant_id", "environment"])
    .execute();
  const out = new Map<string, { production: number; sandbox: number }>();
  for (const c of counts) {
    const entry = out.get(c.merchant_id) ?? { production: 0, sandbox: 0 };
    entry[c.environment] = Number(c.n);
    out.set(c.merchant_id, entry);
  }
  return out;
}

/**
 * `/api/v1/admin/*` (CONTRACT §6): read-only views across merchants for the platform operator's
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
      const sortColumn =
        params.sortBy === "status" ? "status" : params.sortBy === "updatedAt" ? "updated_at" : "created_at";
      const [rows, count] = await Promise.all([
        db
          .selectFrom("merchants")
          .selectAll()
          .orderBy(sortColumn, params.order)
          .orderBy("id", params.order)
          .limit(params.limit)
          .offset(params.offset)
          .execute(),
        db
          .selectFrom("merchants")
          .select((eb) => eb.fn.countAll<string>().as("n"))
          .executeTakeFirstOrThrow(),
      ]);
      const keys = await merchantsView(
        db,
        rows.map((r) => r.id),
      );
      return {
        success: true as const,
        data: rows.map((m) => ({
          id: m.id,
          email: m.email,
          companyName: m.company_name,
          status: m.status,
          createdAt: new Date(m.created_at).toISOString(),
          activeApiKeys: keys.get(m.id) ?? { production: 0, sandbox: 0 },
        })),
        pagination: pagination(params, Number(count.n)),
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
      const m = await db
        .selectFrom("merchants")
        .selectAll()
        .where("id", "=", request.params.id)
        .executeTakeFirst();
      if (!m) throw AppError.notFound("No such merchant.");
      const keys = await merchantsView(db, [m.id]);
      return {
        success: true as const,
        data: {
          id: m.id,
          email: m.email,
          companyName: m.company_name,
          status: m.status,
          createdAt: new Date(m.created_at).toISOString(),
          activeApiKeys: keys.get(m.id) ?? { production: 0, sandbox: 0 },
        },
      };
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
      const row = await db
        .selectFrom("transactions")
        .selectAll()
        .where("id", "=", request.params.id)
        .executeTakeFirst();
      if (!row) throw AppError.notFound("No such transaction.");
      return { success: true as const, data: adminTransactionView(toRecord(row)) };
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
