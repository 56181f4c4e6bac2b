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
 * The index comes from one row per (network, environment) advanced by an atomic upsert: concurrent
 * allocations serialise on that row and never share an index, and an index handed out by a
 * committed transaction is never handed out again. (A rolled-back transaction also rolls back its
 * increment; its address was never stored or shown, so nothing is reused.) Indexes start at
 * `FIRST_DEPOSIT_INDEX`, below which the hot wallet and gas tank live.
 */
export async function allocateDepositAddress(
  trx: Db,
  request: AllocateDepositAddressRequest,
): Promise<AllocatedAddress> {
  const { network, environment } = request;
  const row = await trx
    .insertInto("address_index_counters")
    .values({ network, environment, next_index: FIRST_DEPOSIT_INDEX + 1 })
    .onConflict((oc) =>
      oc
        .columns(["network", "environment"])
        .doUpdateSet({ next_index: sql`address_index_counters.next_index + 1` }),
    )
    .returning(sql<bigint>`next_index - 1`.as("index"))
    .executeTakeFirstOrThrow();
  const index = Number(row.index);
  const address = request.deriver.address(network, environment, index);
  await trx
    .insertInto("watched_addresses")
    .values({
      network,
      environment,
      address,
      derivation_index: index,
      merchant_id: request.merchantId,
      purpose: request.purpose,
      reference_id: request.referenceId ?? null,
      watch_until: request.watchUntil ?? null,
    })
    .execute();
  return { address, index };
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
