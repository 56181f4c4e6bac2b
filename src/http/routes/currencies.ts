import { Type } from "@sinclair/typebox";
import { listCurrencies } from "../../chains/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { commonErrors, ok } from "../schemas/common.js";
import { CurrencySchema, presentCurrency } from "../schemas/currencies.js";

/**
 * `GET /api/v1/public/currencies` (docs/api-reference.md#listcurrencies) and its dashboard twin: the
 * enabled currency types (what the dashboard's forms offer).
 */
export function currencyRoutes(app: App, { chains }: RouteDeps) {
  app.get(
    "/api/v1/public/currencies",
    {
      config: { auth: "apiKey", tier: "standard", permission: "settings:read" },
      schema: {
        summary: "Enabled currency types",
        description:
          "The currency types this deployment accepts (`CURRENCY_TYPES`), with the network, chain id, token " +
          "contract and confirmations of the environment of the key.",
        tags: ["Account"],
        response: { 200: ok(Type.Array(CurrencySchema), { title: "CurrencyListResponse" }), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      return { success: true as const, data: listCurrencies(chains, p.environment).map(presentCurrency) };
    },
  );

  app.get(
    "/api/v1/dashboard/currencies",
    {
      config: { auth: "dashboard", tier: "dashboard", permission: "settings:read" },
      schema: {
        summary: "Enabled currency types (the dashboard's environment)",
        tags: ["Dashboard"],
        response: { 200: ok(Type.Array(CurrencySchema), { title: "CurrencyListResponse" }), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      return { success: true as const, data: listCurrencies(chains, p.environment).map(presentCurrency) };
    },
  );
}
