import { type Expression, type QueryCreator, sql } from "kysely";
import type { Db } from "../db/database.js";
import type { DB } from "../db/schema.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

type Operand<T> = T | Expression<T>;

/**
 * The `held` deposits at one deposit address (README.md#frozen-funds), as a sub-query: the sweeper
 * wraps it in `not exists(…)` and leaves the address alone while one is held (what a frozen or
 * refused sender paid never reaches the hot wallet). Served by `transactions_held_idx`.
 */
export function heldDepositsAt(
  db: QueryCreator<DB>,
  at: { network: Operand<CurrencyType>; environment: Operand<Environment>; address: Operand<string> },
) {
  return db
    .selectFrom("transactions as h")
    .select("h.id")
    .where("h.status", "=", "held")
    .where(sql<boolean>`h.environment = ${at.environment}`)
    .where(sql<boolean>`h.currency_type = ${at.network}`)
    .where(sql<boolean>`h.wallet_address = ${at.address}`);
}

/** The on-chain transfer (`obs_…`) a single-transfer deposit was made of, or null. */
export async function chainObservationOf(db: Db, transactionId: string): Promise<string | null> {
  const row = await db
    .selectFrom("transactions")
    .select("chain_observation_id")
    .where("id", "=", transactionId)
    .executeTakeFirst();
  return row?.chain_observation_id ?? null;
}
