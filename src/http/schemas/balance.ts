import { Type } from "@sinclair/typebox";
import { formatAmount } from "../../domain/money.js";
import type { Balance } from "../../ledger/index.js";
import { CurrencyTypeSchema } from "./transaction.js";

/** One currency type's balance (the API-key and the dashboard reads answer the same). */
export const BalanceSchema = Type.Object(
  {
    currencyType: CurrencyTypeSchema,
    available: Type.Number({ description: "Spendable, in the token (USDT, USDC)" }),
    held: Type.Number({
      description:
        "Reserved for withdrawals and payouts in flight, and deposits held for a decision (a frozen or refused sender), in the token",
    }),
    total: Type.Number({ description: "available + held, in the token" }),
  },
  {
    title: "Balance",
    examples: [{ currencyType: "USDT-TRC20", available: 1250.5, held: 25, total: 1275.5 }],
  },
);

/** A ledger balance as the API presents it (USDT numbers), for both balance reads. */
export function presentBalance(b: Balance) {
  return {
    currencyType: b.currencyType,
    available: formatAmount(b.available),
    held: formatAmount(b.held),
    total: formatAmount(b.total),
  };
}
