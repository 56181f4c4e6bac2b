import type { Insertable, QueryCreator } from "kysely";
import type { Db } from "../db/database.js";
import type { DB } from "../db/schema.js";
import type { WatchedAddressesTable } from "../db/tables/chains.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * The `watched_addresses` rows of deposit addresses (issue #36: this folder owns the table): their
 * insert, for the address allocation of wallet/ and the checkout session insert of deposits/, and
 * the sandbox's check that an address is one of the merchant's.
 */

/**
 * Inserts watched-address rows: a fragment the caller runs (`.execute()`) or composes into its own
 * statement (a data-modifying CTE: `db.with("w", (d) => insertWatchedAddressRows(d, rows))`).
 */
export function insertWatchedAddressRows<QDB extends DB>(
  creator: QueryCreator<QDB>,
  rows: Insertable<WatchedAddressesTable> | readonly Insertable<WatchedAddressesTable>[],
) {
  // The caller's CTEs are its own: typed on the schema alone.
  return (creator as unknown as QueryCreator<DB>).insertInto("watched_addresses").values(rows);
}

/** Is `address` a deposit address of the merchant on (network, environment)? The address is normalised by the caller. */
export async function isMerchantDepositAddress(
  db: Db,
  a: { merchantId: string; network: CurrencyType; environment: Environment; address: string },
): Promise<boolean> {
  const watched = await db
    .selectFrom("watched_addresses")
    .select("address")
    .where("network", "=", a.network)
    .where("environment", "=", a.environment)
    .where("address", "=", a.address)
    .where("merchant_id", "=", a.merchantId)
    .executeTakeFirst();
  return watched !== undefined;
}

/** The merchant a deposit address was issued to on this chain, if it is one (a screening record's). */
export async function merchantOfDepositAddress(
  db: Db,
  a: { network: CurrencyType; environment: Environment; address: string },
): Promise<string | null> {
  const row = await db
    .selectFrom("watched_addresses")
    .select("merchant_id")
    .where("network", "=", a.network)
    .where("environment", "=", a.environment)
    .where("address", "=", a.address)
    .executeTakeFirst();
  return row?.merchant_id ?? null;
}

/**
 * Which of `candidates` an address is also watched on as a wrong-network twin (the hosted page's
 * warning names only what will really be credited). One indexed probe per candidate network.
 */
export async function wrongNetworkTwinsWatched(
  db: Db,
  a: { environment: Environment; address: string; candidates: readonly CurrencyType[] },
): Promise<CurrencyType[]> {
  if (a.candidates.length === 0) return [];
  const rows = await db
    .selectFrom("watched_addresses")
    .select("network")
    .where("network", "in", [...a.candidates])
    .where("environment", "=", a.environment)
    .where("address", "=", a.address)
    .where("wrong_network", "=", true)
    .execute();
  const found = new Set(rows.map((r) => r.network));
  return a.candidates.filter((c) => found.has(c));
}
