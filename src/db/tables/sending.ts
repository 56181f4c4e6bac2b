import type { ColumnType, Generated } from "kysely";
import type { CurrencyType } from "../../domain/currency.js";
import type { Environment } from "../../domain/environment.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0007 (sending: outgoing transfers, nonces, sweeps). */

type Int8Nullable = ColumnType<
  bigint | number | null,
  number | bigint | null | undefined,
  number | bigint | null
>;
type Int8 = ColumnType<bigint | number, number | bigint, number | bigint>;
type Numeric = ColumnType<string, string | bigint, string | bigint>;
type NumericNullable = ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type TransferKind =
  | "withdrawal"
  | "payout"
  | "sweep"
  | "gas_topup"
  | "cold_forward"
  | "return"
  | ResourceKind
  | BatchKind;
/** EVM batched sweeps (issue #39, migration 0036): the gas tank's carrier and the sweeper's deployment. */
export type BatchKind = "sweep_batch" | "sweeper_deploy";
/** The TRON energy engine's steps (issue #38, migration 0033): the resource account's own intents. */
export type ResourceKind = "resource_stake" | "resource_delegation" | "resource_reclaim";
export type OutgoingStatus = "queued" | "signed" | "broadcast" | "confirmed" | "failed";

export interface OutgoingTransfersTable {
  intent_id: string;
  kind: TransferKind;
  network: CurrencyType;
  environment: Environment;
  asset: "token" | "native" | "energy" | "bandwidth";
  from_index: number;
  from_address: string | null;
  to_address: string;
  amount: Numeric;
  status: Generated<OutgoingStatus>;
  nonce: Int8Nullable;
  after_intent_id: string | null;
  tx_hash: string | null;
  block_number: Int8Nullable;
  reason: string | null;
  errors: Generated<number>;
  last_error: string | null;
  next_attempt_at: Timestamp;
  waiting_funds_since: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: NullableTimestamp;
  /** What the mined transfer cost (migration 0033): native coin burned or paid, resource used. */
  fee_paid: NumericNullable;
  resource_used: NumericNullable;
  /** A sweep carried by a batch (migration 0036): never signed on its own; its carrier once assembled. */
  carried: Generated<boolean>;
  carrier_intent_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface OutgoingTransferAttemptsTable {
  intent_id: string;
  seq: number;
  tx_hash: string;
  raw: string;
  fee: ColumnType<Record<string, string>, string, string>;
  expires_at: NullableTimestamp;
  broadcast_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface SenderNoncesTable {
  network: CurrencyType;
  environment: Environment;
  address: string;
  next_nonce: Int8;
}

export interface SendingWalletsTable {
  network: CurrencyType;
  environment: Environment;
  role: "hot_wallet" | "gas_tank" | "resource_account";
  address: string;
  token_balance: NumericNullable;
  native_balance: NumericNullable;
  /** The resource account's TRX staked for energy and bandwidth, sun (migration 0034). */
  staked_balance: NumericNullable;
  observed_at: Timestamp;
}

export interface SweepChecksTable {
  network: CurrencyType;
  environment: Environment;
  address: string;
  checked_at: Timestamp;
  /** Its sweep waits for the resource account's energy since then (migration 0033). */
  energy_wait_since: NullableTimestamp;
}

/** Migration 0031: own addresses the token's issuer froze (open while `released_at` is null). */
export interface FrozenAddressesTable {
  network: CurrencyType;
  environment: Environment;
  address: string;
  role: "hot_wallet" | "gas_tank" | "cold_wallet" | "deposit";
  frozen_at: ColumnType<Date, Date | undefined, Date>;
  released_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Migration 0032: what the ledger moved to its `frozen` custody account, and its custody postings. */
  frozen_amount: ColumnType<string, bigint | string | undefined, bigint | string>;
  postings: ColumnType<number, number | undefined, number>;
  checked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** Migration 0032: the next block each chain's freeze-event follower reads (src/sweep/freeze-watch.ts). */
export interface FreezeWatchCursorsTable {
  network: CurrencyType;
  environment: Environment;
  next_block: ColumnType<bigint | number, number | bigint, number | bigint>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** Migration 0035: energy rented from an outside provider (src/sender/rentals.ts). */
export type RentalStatus =
  | "requested"
  | "ordering"
  | "ordered"
  | "unknown"
  | "delivered"
  | "refused"
  | "expired";
export interface EnergyRentalsTable {
  id: string;
  network: CurrencyType;
  environment: Environment;
  receiver: string;
  energy: ColumnType<string, bigint | string, bigint | string>;
  status: RentalStatus;
  after_intent_id: string | null;
  serves_intent_id: string | null;
  max_sun: ColumnType<string | null, bigint | string | null | undefined, bigint | string | null>;
  provider: ColumnType<string | null, string | null | undefined, string | null>;
  serial: ColumnType<string | null, string | null | undefined, string | null>;
  paid_sun: ColumnType<string | null, bigint | string | null | undefined, bigint | string | null>;
  reason: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: ColumnType<Date, Date | undefined, Date>;
  ordered_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  finished_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface SendingTables {
  energy_rentals: EnergyRentalsTable;
  freeze_watch_cursors: FreezeWatchCursorsTable;
  frozen_addresses: FrozenAddressesTable;
  outgoing_transfers: OutgoingTransfersTable;
  outgoing_transfer_attempts: OutgoingTransferAttemptsTable;
  sender_nonces: SenderNoncesTable;
  sending_wallets: SendingWalletsTable;
  sweep_checks: SweepChecksTable;
}
