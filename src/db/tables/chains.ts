import type { ColumnType, Generated } from "kysely";
import type { CurrencyType } from "../../domain/currency.js";
import type { Environment } from "../../domain/environment.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0004 (chains: address allocation, watcher, sandbox simulator). */

/**
 * int8 (block numbers, HD indexes): the driver reads it as bigint (see db/types.ts). Typed as
 * `bigint | number` so that comparisons accept plain block numbers; read values go through `Number()`.
 */
type Int8 = ColumnType<bigint | number, number | bigint, number | bigint>;
type Int8Nullable = ColumnType<
  bigint | number | null,
  number | bigint | null | undefined,
  number | bigint | null
>;
/** numeric(38,0): read as the exact decimal string. */
type Numeric = ColumnType<string, string | bigint, string | bigint>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type AddressPurpose = "checkout" | "wallet";
export type ObservationStatus = "observed" | "handed_off" | "reorged";

export interface WatchedAddressesTable {
  network: CurrencyType;
  environment: Environment;
  address: string;
  derivation_index: Int8;
  merchant_id: string;
  purpose: AddressPurpose;
  reference_id: string | null;
  watch_until: NullableTimestamp;
  created_at: Timestamp;
  /** A twin of an address made for another currency type of the same key space (migration 0030). */
  wrong_network: Generated<boolean>;
}

export interface ChainCursorsTable {
  network: CurrencyType;
  environment: Environment;
  cursor_block: Int8;
  head_block: Int8Nullable;
  safe_block: Int8Nullable;
  head_seen_at: NullableTimestamp;
  /** Timestamp of the cursor block (the newest stored), from the chain. */
  chain_time: NullableTimestamp;
  last_error: string | null;
  last_error_at: NullableTimestamp;
  lease_owner: string | null;
  lease_until: NullableTimestamp;
  updated_at: Timestamp;
}

export interface ChainBlocksTable {
  network: CurrencyType;
  environment: Environment;
  number: Int8;
  hash: string;
}

export interface ChainObservationsTable {
  id: string;
  network: CurrencyType;
  environment: Environment;
  address: string;
  from_address: string;
  tx_hash: string;
  log_index: number;
  block_number: Int8;
  block_hash: string;
  amount: Numeric;
  /** On-chain base units a finer token left out of `amount` (migration 0030). */
  dust: ColumnType<string, string | bigint | undefined, string | bigint>;
  /** Timestamp of the transfer's block, from the chain (null on rows stored before migration 0011). */
  block_time: NullableTimestamp;
  status: Generated<ObservationStatus>;
  attempts: Generated<number>;
  last_error: string | null;
  next_attempt_at: NullableTimestamp;
  observed_at: Timestamp;
  handed_off_at: NullableTimestamp;
}

/** Migration 0015: the account public keys this database's addresses are derived from. */
export interface AccountKeysTable {
  network: CurrencyType;
  environment: Environment;
  xpub: string;
  recorded_at: Generated<Date>;
}

export interface SimChainsTable {
  network: CurrencyType;
  environment: Environment;
  head: Int8;
  fork: Generated<number>;
  nonce: ColumnType<bigint | number, number | bigint | undefined, number | bigint>;
}

export interface SimBlocksTable {
  network: CurrencyType;
  environment: Environment;
  number: Int8;
  hash: string;
  parent_hash: string;
  mined_at: ColumnType<Date, Date | string, Date | string>;
}

export interface SimTransactionsTable {
  network: CurrencyType;
  environment: Environment;
  tx_hash: string;
  block_number: Int8;
  log_index: number | null;
  from_address: string;
  to_address: string;
  amount: Numeric;
  status: "success" | "failed";
  failure_reason: string | null;
}

export interface ChainsTables {
  account_keys: AccountKeysTable;
  watched_addresses: WatchedAddressesTable;
  chain_cursors: ChainCursorsTable;
  chain_blocks: ChainBlocksTable;
  chain_observations: ChainObservationsTable;
  sim_chains: SimChainsTable;
  sim_blocks: SimBlocksTable;
  sim_transactions: SimTransactionsTable;
  chain_providers: ChainProvidersTable;
  reserve_checks: ReserveChecksTable;
}

/** Migration 0019: each chain provider's health as the watching process last saw it (issue #22). */
export interface ChainProvidersTable {
  network: CurrencyType;
  environment: Environment;
  provider: string;
  condition: "ok" | "down" | "lagging" | "suspect";
  head_block: Int8Nullable;
  latency_ms: number | null;
  disagreements: number;
  last_error: string | null;
  updated_at: Timestamp;
}

/** Migration 0020: the last reserve reconciliation of each chain (issue #22). */
export interface ReserveChecksTable {
  network: CurrencyType;
  environment: Environment;
  checked_at: Date;
  on_chain: ColumnType<string, bigint | string, bigint | string>;
  in_flight: ColumnType<string, bigint | string, bigint | string>;
  owed: ColumnType<string, bigint | string, bigint | string>;
  pending_sweep: ColumnType<string, bigint | string, bigint | string>;
  shortfall: ColumnType<string, bigint | string, bigint | string>;
  tolerance: ColumnType<string, bigint | string, bigint | string>;
  detail: string;
}
