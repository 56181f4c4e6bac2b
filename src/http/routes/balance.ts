import { Type } from "@sinclair/typebox";
import { formatAmount } from "../../domain/money.js";
import { getBalances } from "../../ledger/balances.js";
import type { App, RouteDeps } from "../app-types.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { commonErrors, ok } from "../schemas/common.js";
import { CurrencyTypeSchema } from "../schemas/transaction.js";

const BalanceSchema = Type.Object({
  currencyType: CurrencyTypeSchema,
  available: Type.Number({ description: "Spendable, in USDT" }),
  held: Type.Number({ description: "Reserved for withdrawals and payouts in flight" }),
  total: Type.Number(),
});

/** `GET /api/v1/public/balance` (CONTRACT §4.4). */
export function balanceRoutes(app: App, { database }: RouteDeps) {
  app.get(
    "/api/v1/public/balance",
    {
      config: { auth: "apiKey", tier: "standard" },
      schema: {
        summary: "Balances per currency type",
        tags: ["Account"],
        response: { 200: ok(Type.Array(BalanceSchema)), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      const balances = await getBalances(database.db, p.merchantId, p.environment);
      return {
        success: true as const,
        data: balances.map((b) => ({
          currencyType: b.currencyType,
          available: formatAmount(b.available),
          held: formatAmount(b.held),
          total: formatAmount(b.total),
        })),
      };
    },
  );
}
