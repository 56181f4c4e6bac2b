import { Type } from "@sinclair/typebox";
import { CurrencyTypeSchema } from "./transaction.js";

/** One currency type's balance (the API-key and the dashboard reads answer the same). */
export const BalanceSchema = Type.Object(
  {
    currencyType: CurrencyTypeSchema,
    available: Type.Number({ description: "Spendable, in USDT" }),
    held: Type.Number({ description: "Reserved for withdrawals and payouts in flight, in USDT" }),
    total: Type.Number({ description: "available + held, in USDT" }),
  },
  {
    title: "Balance",
    examples: [{ currencyType: "USDT-TRC20", available: 1250.5, held: 25, total: 1275.5 }],
  },
);
