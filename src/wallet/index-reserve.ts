import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { depositAccountOf, FIRST_DEPOSIT_INDEX } from "./derivation-path.js";

/** How many indexes one sequence round trip reserves (per process and (network, environment)). */
export const DEPOSIT_INDEX_BLOCK = 32;

/**
 * Deposit indexes handed out from a per-process reserve, refilled `block` at a time from the
 * (network, environment) sequence in ONE round trip (`nextval` over `generate_series`) instead of
 * one round trip per session — the "hi/lo" way ORMs allocate ids. Each index still comes from the
 * sequence, so no two callers, processes or machines ever get the same one; what changes is that a
 * process which stops leaves at most `block - 1` reserved indexes per pair unused (gaps, like those
 * a rolled-back transaction already leaves: the address was never stored or shown), and that
 * indexes are no longer in creation order across instances. See docs/decisions/deposits.md.
 *
 * The refill runs on the caller's connection (a transaction, on PGlite the only connection), and a
 * caller that finds the reserve empty refills for itself: no caller ever waits on another's
 * transaction, and a failed refill fails only the request that made it.
 */
export class DepositIndexReserve {
  private readonly reserved = new Map<string, number[]>();

  constructor(private readonly block = DEPOSIT_INDEX_BLOCK) {
    if (!Number.isInteger(block) || block < 1) throw new Error("index block must be a positive integer");
  }

  async next(db: Db, network: CurrencyType, environment: Environment): Promise<number> {
    // One sequence per deposit account: every EVM currency type shares USDT-ERC20's.
    const key = `${depositAccountOf(network)}/${environment}`;
    let list = this.reserved.get(key);
    if (!list) {
      list = [];
      this.reserved.set(key, list);
    }
    const ready = list.shift();
    if (ready !== undefined) return ready;
    const fresh = await reserveIndexes(db, network, environment, this.block);
    // Concurrent refills each add their own block; whoever comes next uses the leftovers.
    const mine = fresh.shift() as number;
    list.push(...fresh);
    return mine;
  }
}

/**
 * `count` indexes from the sequence of (network's deposit account, environment) in one round trip
 * (never repeats; every EVM currency type draws from USDT-ERC20's sequence, `depositAccountOf`):
 * `deposit_index_reserve` (migrations/functions/deposit_index_reserve.sql), which creates the
 * sequence on a currency type's first use.
 */
export async function reserveIndexes(
  db: Db,
  network: CurrencyType,
  environment: Environment,
  count: number,
): Promise<number[]> {
  const rows = await sql<{
    index: string;
  }>`select i::text as index from deposit_index_reserve(${depositAccountOf(network)}, ${environment}, ${count}::int) as i`
    .execute(db)
    .then((r) => r.rows);
  if (rows.length !== count) throw new Error(`nextval returned ${rows.length} rows, expected ${count}`);
  return rows.map((r) => {
    const index = Number(r.index);
    if (index < FIRST_DEPOSIT_INDEX) throw new Error(`deposit index ${index} is in the reserved range`);
    return index;
  });
}
