import { Type } from "@sinclair/typebox";
import { listAuditLog } from "../../audit/index.js";
import { AUDIT_ACTIONS } from "../../domain/audit.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { commonErrors, list, Nullable } from "../schemas/common.js";
import { dateRange } from "../transaction-query.js";

/** `GET /api/v1/dashboard/audit-log` (issue #21): the merchant's audit log, newest first by default. */

const AuditActionSchema = Type.Union(
  AUDIT_ACTIONS.map((a) => Type.Literal(a)),
  { title: "AuditAction" },
);

const AuditRecordSchema = Type.Object(
  {
    id: Type.String(),
    createdAt: Type.String({ format: "date-time" }),
    action: AuditActionSchema,
    environment: Nullable(Type.Union([Type.Literal("production"), Type.Literal("sandbox")])),
    actor: Type.Object({
      type: Type.Union([Type.Literal("user"), Type.Literal("api_key"), Type.Literal("system")], {
        description: "`system`: the gateway itself (`id` names the part: `screening`)",
      }),
      id: Nullable(
        Type.String({
          description: "Dashboard user id, API key id or the system part; none for a failed sign-in",
        }),
      ),
      email: Nullable(Type.String()),
      role: Nullable(Type.String({ description: "The user's role when acting (`owner`)" })),
    }),
    target: Nullable(Type.Object({ type: Type.String(), id: Nullable(Type.String()) })),
    details: Type.Record(Type.String(), Type.Unknown(), {
      description: "What the action changed: settings before/after, a payout's amount and address, filters …",
    }),
    clientIp: Nullable(Type.String()),
    userAgent: Nullable(Type.String()),
    requestId: Nullable(Type.String()),
  },
  { title: "AuditRecord" },
);

// The list conventions but `sortBy`: an audit log has one order, by time.
const { page, limit, order } = ListQuerySchema.properties;
const AuditLogQuery = Type.Object({
  page,
  limit,
  order,
  action: Type.Optional(AuditActionSchema),
  actorId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  environment: Type.Optional(Type.Union([Type.Literal("production"), Type.Literal("sandbox")])),
  from: Type.Optional(Type.String({ format: "date-time", description: "createdAt ≥ from" })),
  to: Type.Optional(Type.String({ format: "date-time", description: "createdAt < to" })),
});

export function auditLogRoutes(app: App, { database }: RouteDeps) {
  app.get(
    "/api/v1/dashboard/audit-log",
    {
      config: { auth: "dashboard", tier: "dashboard", permission: "audit:read" },
      schema: {
        summary: "The account's audit log: who did what, when, from where",
        description:
          "Append-only records of sign-ins and failed sign-ins, password and 2FA changes, API key create/rotate/" +
          "revoke, settings changes (before and after), webhook URL and secret changes, payouts, withdrawal " +
          "approvals and rejections, and exports — both environments and account-wide actions alike " +
          "(`environment` filters). List conventions; ordered by time (`order`, newest first by default).",
        tags: ["Dashboard"],
        querystring: AuditLogQuery,
        response: { 200: list(AuditRecordSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const q = request.query;
      const params = listParams(q);
      const { rows, total } = await listAuditLog(
        database.db,
        p.merchantId,
        { action: q.action, actorId: q.actorId, environment: q.environment, ...dateRange(q) },
        params,
      );
      return { success: true as const, data: rows, pagination: pagination(params, total) };
    },
  );
}
