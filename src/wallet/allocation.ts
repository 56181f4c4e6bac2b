import { sql } from "kysely";
import type { Network } from "../chains/network.js";
import type { Db } from "../db/database.js";
import type { AddressPurpose } from "../db/tables/chains.js";
import type { Environment } from "../domain/environment.js";
import type { AddressDeriver } from "./address-deriver.js";
import { FIRST_DEPOSIT_INDEX } from "./derivation-path.js";

export interface AllocateDepositAddressRequest {
  /** Derives the address of the allocated index (watch-only: it holds no private key). */
  deriver: AddressDeriver;
  network: Network;
  environment: Environment;
  merchantId: string;
  /** `checkout` (a session; watched until `watchUntil`) or `wallet` (`/wallet/generate`; watched for good). */
  purpose: AddressPurpose;
  /** When the watcher stops matching the address; null/absent = never (wallet addresses). */
  watchUntil?: Date | null;
  /** The record the address belongs to (session or wallet id), for the deposit logic. */
  referenceId?: string | null;
}

export interface AllocatedAddress {
  address: string;
  index: number;
}

/**
 * Allocates the next HD index of (network, environment), derives its address and adds it to the
 * watched set — all inside the caller's transaction `trx`, so the address exists exactly when the
 * record that uses it does.
 *
 * The index comes from a PostgreSQL sequence per (network, environment) (migration 0006): concurrent
 * allocations never wait for each other and never share an index. An index taken by a transaction
 * that rolls back is skipped, never reused (its address was never stored or shown). Indexes start
 * at `FIRST_DEPOSIT_INDEX` (100), below which the hot wallet and gas tank live; the unique
 * (network, environment, derivation_index) of `watched_addresses` backs this up.
 */
export async function allocateDepositAddress(
  trx: Db,
  request: AllocateDepositAddressRequest,
): Promise<AllocatedAddress> {
  const index = await nextDepositIndex(trx, request.network, request.environment);
  const address = request.deriver.address(request.network, request.environment, index);
  await trx
    .insertInto("watched_addresses")
    .values(watchedAddressValues(request, index, address))
    .execute();
  return { address, index };
}

/** The next deposit index of (network, environment) from its sequence (never waits, never repeats). */
export async function nextDepositIndex(db: Db, network: Network, environment: Environment): Promise<number> {
  const row = await sql<{
    index: string;
  }>`select nextval(${sql.raw(`'${indexSequence(network, environment)}'`)})::text as index`
    .execute(db)
    .then((r) => r.rows[0]);
  if (!row) throw new Error("nextval returned no row");
  const index = Number(row.index);
  if (index < FIRST_DEPOSIT_INDEX) throw new Error(`deposit index ${index} is in the reserved range`);
  return index;
}

/** The `watched_addresses` row of an allocated address (for callers that insert it in a larger statement). */
export function watchedAddressValues(
  request: Omit<AllocateDepositAddressRequest, "deriver">,
  index: number,
  address: string,
) {
  return {
    network: request.network,
    environment: request.environment,
    address,
    derivation_index: index,
    merchant_id: request.merchantId,
    purpose: request.purpose,
    reference_id: request.referenceId ?? null,
    watch_until: request.watchUntil ?? null,
  };
}

/** The sequence of deposit indexes of (network, environment), e.g. `deposit_index_usdt_trc20_sandbox`. */
function indexSequence(network: Network, environment: Environment): string {
  return `deposit_index_${network.toLowerCase().replace("-", "_")}_${environment}`;
}

/** Changes how long an address stays watched (e.g. a session that expired: + the late-payment window). */
export async function setWatchUntil(
  trx: Db,
  where: { network: Network; environment: Environment; address: string },
  watchUntil: Date | null,
): Promise<void> {
  await trx
    .updateTable("watched_addresses")
    .set({ watch_until: watchUntil })
    .where("network", "=", where.network)
    .where("environment", "=", where.environment)
    .where("address", "=", where.address)
    .execute();
}
