import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * What the ledger owes on one chain, for reserve reconciliation (issue #22), in one read: every
 * merchant's available and held balance, the fees collected (the system's fee account, summed from
 * its journal), and the custody the issuer froze on own addresses or destroyed there (issue #40:
 * the system accounts `frozen` and `written_off`, as positive amounts).
 */
export async function owedOnChain(
  db: Db,
  chain: { network: CurrencyType; environment: Environment },
): Promise<{ merchants: bigint; fees: bigint; frozen: bigint; writtenOff: bigint }> {
  const { network, environment } = chain;
  const owed = await sql<{
    merchants: string | null;
    fees: string | null;
    frozen: string | null;
    written_off: string | null;
  }>`
    select
      (select sum(balance) from ledger_accounts
        where owner <> 'system' and environment = ${environment} and currency_type = ${network}
          and kind in ('available', 'held')) as merchants,
      s.fees, s.frozen, s.written_off
    from (
      select sum(e.amount) filter (where a.kind = 'fees') as fees,
             -sum(e.amount) filter (where a.kind = 'frozen') as frozen,
             -sum(e.amount) filter (where a.kind = 'written_off') as written_off
      from ledger_entries e join ledger_accounts a on a.id = e.account_id
      where a.owner = 'system' and a.kind in ('fees', 'frozen', 'written_off')
        and a.environment = ${environment} and a.currency_type = ${network}
    ) s
  `.execute(db);
  const r = owed.rows[0];
  return {
    merchants: BigInt(r?.merchants ?? 0),
    fees: BigInt(r?.fees ?? 0),
    frozen: BigInt(r?.frozen ?? 0),
    writtenOff: BigInt(r?.written_off ?? 0),
  };
}
