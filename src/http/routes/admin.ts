import { Type } from "@sinclair/typebox";
import type { Db } from "../../db/database.js";
import { AppError } from "../../domain/errors.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { commonErrors, list, ok } from "../schemas/common.js";

const AdminMerchant = Type.Object({
  id: Type.String(),
  email: Type.String(),
  companyName: Type.String(),
  status: Type.Union([Type.Literal("active"), Type.Literal("suspended")]),
  createdAt: Type.String({ format: "date-time" }),
  activeApiKeys: Type.Object({ production: Type.Integer(), sandbox: Type.Integer() }),
});

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
 * `/api/v1/admin/*` (CONTRACT §6): read-only views for the platform operator's admin accounts.
 * Any write answers 403 (the dashboard verifier refuses admin writes; this catch-all makes every
 * write path exist so it does so even for paths without a read).
 */
export function adminRoutes(app: App, { database }: RouteDeps) {
  const db = database.db;
  const cfg = { auth: "dashboard", tier: "dashboard" } as const;

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

  // Admin is read-only: every write under /api/v1/admin/* is refused (after authentication).
  app.route({
    method: ["POST", "PUT", "PATCH", "DELETE"],
    url: "/api/v1/admin/*",
    config: cfg,
    schema: { hide: true },
    handler: async () => {
      throw AppError.forbidden("Admin access is read-only.");
    },
  });
}
