import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { presentTransaction, type TransactionRecord } from "../../domain/transaction.js";
import { type AdminMerchantView, getMerchantForAdmin, listMerchantsForAdmin } from "../../merchants/index.js";
import { costsSince, feePerServed, nativeUnit, transferCosts } from "../../sender/index.js";
import { getAnyTransaction, listTransactionsAcrossMerchants } from "../../transactions/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { adminPrincipal } from "../plugins/dashboard-auth.js";
import { commonErrors, list, ok } from "../schemas/common.js";
import { CurrencyTypeSchema, TransactionSchema } from "../schemas/transaction.js";
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

/** Native-coin base units as a decimal string (wei exceed a JSON number's exact range). */
const baseUnits = (description: string) => Type.String({ pattern: "^[0-9]+$", description });

const AdminChainCost = Type.Object(
  {
    currencyType: CurrencyTypeSchema,
    environment: Type.Union([Type.Literal("production"), Type.Literal("sandbox")]),
    month: Type.String({ pattern: "^[0-9]{4}-[0-9]{2}$", description: "UTC month the transfers finished" }),
    purpose: Type.Union([Type.Literal("collection"), Type.Literal("outgoing"), Type.Literal("stake")], {
      description:
        "collection: top-ups, sweeps and the energy delegations they waited for; outgoing: withdrawals, " +
        "payouts, returns, cold forwards and the hot wallet's delegations; stake: the resource account's stakes",
    }),
    transfers: Type.Integer({ description: "finished transfers with a recorded cost" }),
    nativeUnit: Type.Object({ name: Type.String(), decimals: Type.Integer() }),
    fee: baseUnits("native coin burned or paid (sun on TRON, wei on EVM networks), energy rentals included"),
    rental: baseUnits("of fee, what energy rental providers charged (paid by rental)"),
    used: baseUnits("resource consumed: TRON energy (delegated included), EVM gas"),
    unburned: Type.Integer({ description: "of those transfers, the ones that burned nothing" }),
    served: Type.Integer({ description: "confirmed sweeps (collection) or payments out (outgoing)" }),
    feePerServed: Type.Union(
      [baseUnits("fee / served, rounded down: per collected deposit or per payment"), Type.Null()],
      { description: "null when nothing was served" },
    ),
  },
  { title: "AdminChainCost" },
);

const ChainCostsQuery = Type.Object(
  {
    months: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 120,
        default: 3,
        description: "this month and the months - 1 before it",
      }),
    ),
  },
  { additionalProperties: false },
);

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
export function adminRoutes(app: App, { database, clock }: RouteDeps) {
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

  app.get(
    "/api/v1/admin/chain-costs",
    {
      config: cfg,
      schema: {
        summary:
          "Admin: what the gateway's own transfers cost, per currency type, environment, month and purpose " +
          "(as `stablegate chain costs`)",
        tags: ["Admin"],
        querystring: ChainCostsQuery,
        response: { 200: ok(Type.Array(AdminChainCost)), ...commonErrors },
      },
    },
    async (request) => {
      adminPrincipal(request);
      const rows = await transferCosts(db, costsSince(new Date(clock.now()), request.query.months ?? 3));
      return {
        success: true as const,
        data: rows.map((r) => ({
          currencyType: r.network,
          environment: r.environment,
          month: r.month,
          purpose: r.purpose,
          transfers: r.transfers,
          nativeUnit: nativeUnit(r.network),
          fee: r.fee.toString(),
          rental: r.rental.toString(),
          used: r.used.toString(),
          unburned: r.unburned,
          served: r.served,
          feePerServed: feePerServed(r)?.toString() ?? null,
        })),
      };
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
