import type { Expression, QueryCreator } from "kysely";
import { sql } from "kysely";
import type { DB } from "../db/schema.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * What the deposit addresses hold, read from the watcher's tables (`watched_addresses`,
 * `chain_observations`) for the sweeper and reserve reconciliation (issue #36: the tables' SQL stays
 * here). Fragments: the caller composes them into its own statement (one statement as before).
 */

export interface WatchedScope {
  network: CurrencyType;
  environment: Environment;
}

/**
 * The watched (deposit) addresses of one chain with their derivation index, as a sub-query to
 * select from: `db.selectFrom(watchedAddressesOf(db, chain).as("w"))`.
 */
export function watchedAddressesOf(db: QueryCreator<DB>, scope: WatchedScope) {
  return db
    .selectFrom("watched_addresses")
    .select(["network", "environment", "address", "derivation_index"])
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment);
}

/**
 * The deposits to an address handed off after `after` (all of them when `after` is null), as a
 * sub-query the caller wraps in `exists(…)`; the address (and chain) are columns of its query.
 */
export function handedOffAfter(
  db: QueryCreator<DB>,
  to: {
    network: Expression<CurrencyType>;
    environment: Expression<Environment>;
    address: Expression<string>;
  },
  after: Expression<Date | null>,
) {
  return db
    .selectFrom("chain_observations as o")
    .select(sql`1`.as("one"))
    .where("o.network", "=", to.network)
    .where("o.environment", "=", to.environment)
    .where("o.address", "=", to.address)
    .where("o.status", "=", "handed_off")
    .where((eb) => eb.or([eb(after, "is", null), eb("o.handed_off_at", ">", after)]));
}

/**
 * The transfers to one address seen on the chain but not yet handed off (confirming), as a
 * sub-query: the sweeper leaves the address alone while there is one (README.md#frozen-funds), so
 * coins whose sender is still to be checked — and may be held — never reach the hot wallet.
 */
export function pendingObservationsAt(
  db: QueryCreator<DB>,
  at: {
    network: Expression<CurrencyType> | CurrencyType;
    environment: Expression<Environment> | Environment;
    address: Expression<string> | string;
  },
) {
  return db
    .selectFrom("chain_observations as p")
    .select(sql`1`.as("one"))
    .where("p.network", "=", at.network)
    .where("p.environment", "=", at.environment)
    .where("p.address", "=", at.address)
    .where("p.status", "=", "observed");
}

/**
 * What each address of one chain received in deposits handed off, with its derivation index, as a
 * sub-query to select from (`received`: the sum of their amounts).
 */
export function handedOffReceipts(db: QueryCreator<DB>, scope: WatchedScope) {
  return db
    .selectFrom("chain_observations as o")
    .innerJoin("watched_addresses as w", (j) =>
      j
        .onRef("w.network", "=", "o.network")
        .onRef("w.environment", "=", "o.environment")
        .onRef("w.address", "=", "o.address"),
    )
    .select((eb) => ["o.address", "w.derivation_index", eb.fn.sum<string>("o.amount").as("received")])
    .where("o.network", "=", scope.network)
    .where("o.environment", "=", scope.environment)
    .where("o.status", "=", "handed_off")
    .groupBy(["o.address", "w.derivation_index"]);
}

/**
 * The dust of one chain: what tokens finer than the API's 6 decimals left out of the deposits handed
 * off (on-chain base units; zero for 6-decimal tokens). It stays on the deposit addresses.
 */
export async function handedOffDust(db: QueryCreator<DB>, scope: WatchedScope): Promise<bigint> {
  const row = await db
    .selectFrom("chain_observations")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>("dust"), eb.val("0")).as("dust"))
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("status", "=", "handed_off")
    .executeTakeFirstOrThrow();
  return BigInt(row.dust);
}
