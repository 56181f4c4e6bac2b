import type { ColumnType, Generated, Selectable } from "kysely";
import type { Environment } from "../../domain/environment.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0002 (ledger and transactions). Money columns are numeric(38,0): read as decimal strings. */

type Numeric = ColumnType<string, string | bigint, string | bigint>;
type NumericNullable = ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>;

export type AccountKind =
  | "available"
  | "held"
  | "chain_incoming"
  | "chain_outgoing"
  | "fees"
  | "frozen"
  | "written_off";
export type PostingKind = "deposit" | "hold" | "release" | "settle" | "custody";

export interface LedgerAccountsTable {
  id: Generated<string>;
  owner: string;
  environment: Environment;
  currency_type: string;
  kind: AccountKind;
  balance: NumericNullable;
  created_at: Timestamp;
}

export interface LedgerPostingsTable {
  id: Generated<string>;
  business_key: string;
  kind: PostingKind;
  environment: Environment;
  transaction_id: string | null;
  created_at: Timestamp;
}

export interface LedgerEntriesTable {
  id: Generated<string>;
  posting_id: string;
  account_id: string;
  amount: Numeric;
  created_at: Timestamp;
}

export interface TransactionsTable {
  id: string;
  merchant_id: string;
  environment: Environment;
  type: "deposit" | "withdrawal" | "payout";
  status: string;
  currency_type: string;
  amount: Numeric;
  fee: Numeric;
  net_amount: Numeric;
  actual_balance: NumericNullable;
  wallet_address: string | null;
  blockchain_tx_hash: string | null;
  order_id: string | null;
  reference: string | null;
  external_user_id: string | null;
  checkout_session_id: string | null;
  rejection_reason: string | null;
  metadata: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  confirmed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  search_text: ColumnType<string, never, never>;
  /** Migration 0006: the one transfer a single-transfer deposit was made of (unique). */
  chain_observation_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0006: the `/wallet/generate` wallet a deposit was paid to. */
  deposit_wallet_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** A deposit that arrived as another currency type than its address was made for (migration 0030). */
  wrong_network: Generated<boolean>;
  /** Why a deposit is (or was) `held` (migration 0031, issue #40). */
  hold_reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** The payment link that opened the session of this deposit transaction (migration 0039, issue #41). */
  payment_link_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface LedgerTables {
  ledger_accounts: LedgerAccountsTable;
  ledger_postings: LedgerPostingsTable;
  ledger_entries: LedgerEntriesTable;
  transactions: TransactionsTable;
}

export type TransactionRow = Selectable<TransactionsTable>;
