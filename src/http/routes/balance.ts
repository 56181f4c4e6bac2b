import { Type } from "@sinclair/typebox";
import { getBalances } from "../../ledger/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { BalanceSchema, presentBalance } from "../schemas/balance.js";
import { commonErrors, ok } from "../schemas/common.js";

/** `GET /api/v1/public/balance` (docs/api-reference.md#getbalance). */
export function balanceRoutes(app: App, { database, chains }: RouteDeps) {
  app.get(
    "/api/v1/public/balance",
    {
      config: { auth: "apiKey", tier: "standard", permission: "money:read" },
      schema: {
        summary: "Balances per currency type",
        tags: ["Account"],
        response: { 200: ok(Type.Array(BalanceSchema), { title: "BalanceListResponse" }), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      const balances = await getBalances(
        database.db,
        p.merchantId,
        p.environment,
        chains.enabledCurrencyTypes(),
      );
      return {
        success: true as const,
        data: balances.map(presentBalance),
      };
    },
  );
}
