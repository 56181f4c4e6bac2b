import type { Db } from "../db/database.js";
import { CURRENCY_TYPES, type CurrencyType, DEFAULT_ENABLED_CURRENCY_TYPES } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

export interface Balance {
  currencyType: CurrencyType;
  available: bigint;
  held: bigint;
  total: bigint;
}

/**
 * A merchant's balances in one environment: one row per enabled currency type (zero when never
 * used), and one for any other currency type that still holds money (a type disabled after use:
 * money is never hidden), in the registry's order.
 */
export async function getBalances(
  db: Db,
  merchantId: string,
  environment: Environment,
  enabled: readonly CurrencyType[] = DEFAULT_ENABLED_CURRENCY_TYPES,
): Promise<Balance[]> {
  const rows = await db
    .selectFrom("ledger_accounts")
    .select(["currency_type", "kind", "balance"])
    .where("owner", "=", merchantId)
    .where("environment", "=", environment)
    .execute();
  return CURRENCY_TYPES.map((currencyType) => {
    const of = (kind: string) =>
      BigInt(rows.find((r) => r.currency_type === currencyType && r.kind === kind)?.balance ?? "0");
    const available = of("available");
    const held = of("held");
    return { currencyType, available, held, total: available + held };
  }).filter((b) => enabled.includes(b.currencyType) || b.total !== 0n);
}
