import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import { ENVIRONMENTS, type Environment } from "../domain/environment.js";

/**
 * Is an address ours, and what arrived at it: reads of `watched_addresses` (the deposit addresses
 * the gateway issued) and `chain_observations` (the transfers the watcher stored), for the
 * destination check of a withdrawal and the signer's policy (which runs them on its own connection).
 * Addresses are normalised by the caller.
 */

/**
 * Is `address` a deposit address the gateway issued on one of `networks` (one, or a key space:
 * `sameKeySpace`), in either environment? (Networks and environments named: the primary key
 * (network, environment, address) answers it.)
 */
export async function isIssuedDepositAddress(
  db: Db,
  networks: CurrencyType | readonly CurrencyType[],
  address: string,
): Promise<boolean> {
  const issued = await db
    .selectFrom("watched_addresses")
    .select("address")
    .where("network", "in", typeof networks === "string" ? [networks] : [...networks])
    .where("environment", "in", [...ENVIRONMENTS])
    .where("address", "=", address)
    .limit(1)
    .executeTakeFirst();
  return issued !== undefined;
}

/** Is `address` recorded for this chain (network, environment) at a derivation index of at least `fromIndex`? */
export async function isRecordedAddressFromIndex(
  db: Db,
  network: CurrencyType,
  environment: Environment,
  address: string,
  fromIndex: number,
): Promise<boolean> {
  const row = await db
    .selectFrom("watched_addresses")
    .select("address")
    .where("network", "=", network)
    .where("environment", "=", environment)
    .where("address", "=", address)
    .where("derivation_index", ">=", fromIndex)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The address recorded for this chain (network, environment) at derivation index `index`, if any. */
export async function recordedAddressAt(
  db: Db,
  network: CurrencyType,
  environment: Environment,
  index: number,
): Promise<string | undefined> {
  const row = await db
    .selectFrom("watched_addresses")
    .select("address")
    .where("network", "=", network)
    .where("environment", "=", environment)
    .where("derivation_index", "=", index)
    .limit(1)
    .executeTakeFirst();
  return row?.address;
}

/** The derivation index of a recorded deposit address on this chain, or null (a held deposit's return). */
export async function recordedIndexOf(
  db: Db,
  at: { network: CurrencyType; environment: Environment; address: string },
): Promise<number | null> {
  const row = await db
    .selectFrom("watched_addresses")
    .select("derivation_index")
    .where("network", "=", at.network)
    .where("environment", "=", at.environment)
    .where("address", "=", at.address)
    .limit(1)
    .executeTakeFirst();
  return row ? Number(row.derivation_index) : null;
}

/** Has a transfer to `address` on this chain been stored and handed off (a confirmed deposit)? */
export async function hasHandedOffDeposit(
  db: Db,
  network: CurrencyType,
  environment: Environment,
  address: string,
): Promise<boolean> {
  const credit = await db
    .selectFrom("chain_observations")
    .select("id")
    .where("network", "=", network)
    .where("environment", "=", environment)
    .where("address", "=", address)
    .where("status", "=", "handed_off")
    .limit(1)
    .executeTakeFirst();
  return credit !== undefined;
}
