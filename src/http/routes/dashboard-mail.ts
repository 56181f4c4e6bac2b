import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { listOutbox, mailView } from "../../mail/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { dashboardSession } from "../plugins/dashboard-auth.js";
import { commonErrors, list } from "../schemas/common.js";

const MailSchema = Type.Object(
  {
    id: Type.String(),
    to: Type.String(),
    subject: Type.String(),
    text: Type.String(),
    createdAt: Type.String({ format: "date-time" }),
  },
  { title: "DevMail" },
);

/**
 * `GET /api/v1/dashboard/dev/mail`: the local outbox (development without SMTP_URL), the signed-in
 * user's own mails only. Not available in production mode (404).
 */
export function dashboardMailRoutes(app: App, { config, database }: RouteDeps) {
  app.get(
    "/api/v1/dashboard/dev/mail",
    {
      config: { auth: "dashboard", tier: "dashboard", permission: "dev_mail:read", errors: ["NOT_FOUND"] },
      schema: {
        summary: "Development only: mails the local outbox holds for the signed-in user",
        tags: ["Dashboard"],
        querystring: ListQuerySchema,
        response: { 200: list(MailSchema), ...commonErrors },
      },
    },
    async (request) => {
      if (config.production) throw AppError.notFound();
      const params = listParams(request.query);
      const { rows, total } = await listOutbox(
        database.db,
        dashboardSession(request).email,
        params.limit,
        params.offset,
      );
      return {
        success: true as const,
        data: rows.map(mailView),
        pagination: pagination(params, total),
      };
    },
  );
}
