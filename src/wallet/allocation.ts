import type { Db } from "../db/database.js";
import type { AddressPurpose } from "../db/tables/chains.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { insertWatchedAddressRows } from "../watcher/index.js";
import type { AddressDeriver } from "./address-deriver.js";
import { type DepositIndexReserve, reserveIndexes } from "./index-reserve.js";

export interface AllocateDepositAddressRequest {
  /** Derives the address of the allocated index (watch-only: it holds no private key). */
  deriver: AddressDeriver;
  network: CurrencyType;
  environment: Environment;
  merchantId: string;
  /** `checkout` (a session; watched until `watchUntil`) or `wallet` (`/wallet/generate`; watched for good). */
  purpose: AddressPurpose;
  /** When the watcher stops matching the address; null/absent = never (wallet addresses). */
  watchUntil?: Date | null;
  /** The record the address belongs to (session or wallet id), for the deposit logic. */
  referenceId?: string | null;
  /** The process's reserve of indexes; without it, one sequence round trip per allocation. */
  indexes?: DepositIndexReserve;
  /**
   * The other currency types the address is also watched on (`wrongNetworkTwins`: a payment sent
   * as one of them is credited as its own deposit, flagged wrong network).
   */
  twins?: readonly CurrencyType[];
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
  const index = await nextDepositIndex(trx, request.network, request.environment, request.indexes);
  const address = request.deriver.address(request.network, request.environment, index);
  await insertWatchedAddressRows(trx, watchedAddressRows(request, index, address)).execute();
  return { address, index };
}

/**
 * The next deposit index of (network, environment) from its sequence (never waits, never repeats):
 * from the process's reserve when given, else straight from the sequence.
 */
export async function nextDepositIndex(
  db: Db,
  network: CurrencyType,
  environment: Environment,
  indexes?: DepositIndexReserve,
): Promise<number> {
  if (indexes) return indexes.next(db, network, environment);
  const [index] = await reserveIndexes(db, network, environment, 1);
  return index as number;
}

/** The `watched_addresses` rows of an allocated address: its own, and one per wrong-network twin. */
export function watchedAddressRows(
  request: Omit<AllocateDepositAddressRequest, "deriver" | "indexes">,
  index: number,
  address: string,
) {
  const own = watchedAddressValues(request, index, address);
  return [own, ...(request.twins ?? []).map((network) => ({ ...own, network, wrong_network: true }))];
}

/** The `watched_addresses` row of an allocated address (for callers that insert it in a larger statement). */
export function watchedAddressValues(
  request: Omit<AllocateDepositAddressRequest, "deriver" | "indexes">,
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
