import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { CURRENCY_TYPES, type CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

export interface Balance {
  currencyType: CurrencyType;
  available: bigint;
  held: bigint;
  total: bigint;
}

/**
 * A merchant's balances in one environment, one row per currency type (zero when never used).
 * Inside a transaction that credited the merchant, its credits are still pending (applied at
 * commit, migration 0022) and are added here; outside one there are none to add.
 */
export async function getBalances(db: Db, merchantId: string, environment: Environment): Promise<Balance[]> {
  const rows = await db
    .selectFrom("ledger_accounts as a")
    .select((eb) => [
      "a.currency_type",
      "a.kind",
      sql<string>`a.balance + coalesce(${eb
        .selectFrom("ledger_pending_credits as p")
        .select((p) => p.fn.sum<string>("p.amount").as("s"))
        .whereRef("p.account_id", "=", "a.id")}, 0)`.as("balance"),
    ])
    .where("a.owner", "=", merchantId)
    .where("a.environment", "=", environment)
    .execute();
  return CURRENCY_TYPES.map((currencyType) => {
    const of = (kind: string) =>
      BigInt(rows.find((r) => r.currency_type === currencyType && r.kind === kind)?.balance ?? "0");
    const available = of("available");
    const held = of("held");
    return { currencyType, available, held, total: available + held };
  });
}
