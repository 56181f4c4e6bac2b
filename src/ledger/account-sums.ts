import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * What the ledger owes on one chain, for reserve reconciliation (issue #22), in one read: every
 * merchant's available and held balance, and the fees collected (the system's fee account, summed
 * from its journal).
 */
export async function owedOnChain(
  db: Db,
  chain: { network: CurrencyType; environment: Environment },
): Promise<{ merchants: bigint; fees: bigint }> {
  const { network, environment } = chain;
  const owed = await sql<{ merchants: string | null; fees: string | null }>`
    select
      (select sum(balance) from ledger_accounts
        where owner <> 'system' and environment = ${environment} and currency_type = ${network}
          and kind in ('available', 'held')) as merchants,
      (select sum(e.amount) from ledger_entries e join ledger_accounts a on a.id = e.account_id
        where a.owner = 'system' and a.kind = 'fees'
          and a.environment = ${environment} and a.currency_type = ${network}) as fees
  `.execute(db);
  return { merchants: BigInt(owed.rows[0]?.merchants ?? 0), fees: BigInt(owed.rows[0]?.fees ?? 0) };
}
