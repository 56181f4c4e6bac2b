import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Config } from "../../config/config.js";
import type { ApiKeyLookups } from "../../merchants/index.js";
import type { Principal } from "../context.js";
import { authenticateApiKey } from "./api-key-auth.js";
import { authenticateDashboard } from "./dashboard-auth.js";

/**
 * Authentication for every route that declares `config.auth`, in onRequest (after rate limiting,
 * before the body is parsed). `merchant` routes take either channel: an `apikey` header selects
 * the API-key channel, otherwise the dashboard session is checked. Either way the caller acts for a
 * member, whose role must allow the route's `config.permission` (one check: `assertRoleAllows`).
 */
export function registerAuth(app: FastifyInstance, config: Config, keys: ApiKeyLookups) {
  app.decorateRequest("principal", undefined);
  app.addHook("onRequest", async (request) => {
    const routeConfig = request.routeOptions.config;
    const mode = routeConfig?.auth;
    if (!mode) return;
    const useApiKey = mode === "apiKey" || (mode === "merchant" && request.headers.apikey !== undefined);
    request.principal = useApiKey
      ? await authenticateApiKey(request, config, keys)
      : await authenticateDashboard(request, { apiKeyAccepted: mode === "merchant" });
  });
}

/** The caller of an authenticated route; throws if the route was declared without `config.auth`. */
export function principal(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error("route is missing config.auth");
  return request.principal;
}

/** The caller of an `auth: "apiKey"` route. */
export function apiKeyPrincipal(request: FastifyRequest): Extract<Principal, { channel: "apiKey" }> {
  const p = principal(request);
  if (p.channel !== "apiKey") throw new Error("route is not on the API-key channel");
  return p;
}
