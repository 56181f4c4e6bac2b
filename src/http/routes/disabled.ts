import { AppError } from "../../domain/errors.js";
import type { App, RouteDeps } from "../app-types.js";
import { commonErrors } from "../schemas/common.js";

/**
 * Endpoints that the spec retired (docs/merchants/errors.md#retired-endpoints). Registered explicitly so they answer
 * 404 NOT_FOUND before any authentication, whatever later routes are added around them.
 */
export const DISABLED_ROUTES = [
  { method: "POST", url: "/api/v1/public/payout/create" },
  { method: "ALL", url: "/api/v1/refund" },
  { method: "ALL", url: "/api/v1/refund/*" },
  { method: "ALL", url: "/api/v1/token/*" },
  { method: "ALL", url: "/api/v1/tokens/*" },
  { method: "ALL", url: "/api/v1/wallet/transfer" },
  { method: "ALL", url: "/api/v1/wallet/transfer*" },
  { method: "ALL", url: "/api/v1/notifications/test" },
  { method: "ALL", url: "/api/v1/debug/*" },
] as const;

const METHODS = ["DELETE", "GET", "HEAD", "PATCH", "POST", "PUT", "OPTIONS"] as const;

export function disabledRoutes(app: App, _deps: RouteDeps) {
  for (const r of DISABLED_ROUTES) {
    app.route({
      method: r.method === "ALL" ? [...METHODS] : r.method,
      url: r.url,
      config: { tier: "standard" },
      schema: { hide: true, response: { 404: commonErrors[404] } },
      // Refused in onRequest, before the body is parsed or credentials are looked at.
      onRequest: async () => {
        throw AppError.notFound("This endpoint is disabled.");
      },
      handler: async () => {
        throw AppError.notFound("This endpoint is disabled.");
      },
    });
  }
}
