import type { ColumnType } from "kysely";
import type { CurrencyType } from "../../domain/currency.js";
import type { Environment } from "../../domain/environment.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0006 (deposits: checkout sessions, deposit wallets, idempotency keys). */

type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface CheckoutSessionsTable {
  /** = `transactions.id` of the session's deposit transaction. */
  id: string;
  merchant_id: string;
  environment: Environment;
  network: CurrencyType;
  address: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  callback_url: string | null;
  closed_at: NullableTimestamp;
  created_at: Timestamp;
  /**
   * A price in fiat (migration 0037, issue #41): the price in 10^-6 units of `price_currency`, the
   * locked rate (token units per unit of fiat, exact decimal text), its source and time; all or none.
   */
  price_amount: ColumnType<string | null, bigint | string | null | undefined, never>;
  price_currency: ColumnType<string | null, string | null | undefined, never>;
  exchange_rate: ColumnType<string | null, string | null | undefined, never>;
  rate_source: ColumnType<string | null, string | null | undefined, never>;
  rate_at: ColumnType<Date | null, Date | null | undefined, never>;
  /** Where the hosted page sends the payer back to the shop (migration 0037). */
  success_url: ColumnType<string | null, string | null | undefined, never>;
  cancel_url: ColumnType<string | null, string | null | undefined, never>;
}

export interface DepositWalletsTable {
  id: string;
  merchant_id: string;
  environment: Environment;
  network: CurrencyType;
  address: string;
  label: string | null;
  external_user_id: string | null;
  created_at: Timestamp;
}

export interface IdempotencyKeysTable {
  merchant_id: string;
  environment: Environment;
  key: string;
  request_hash: string;
  state: "running" | "done";
  response_status: number | null;
  response_body: string | null;
  created_at: Timestamp;
  locked_at: Timestamp;
}

/** Migration 0031: the decision on a held deposit (release or return), carried out by a worker. */
export interface HeldDepositDecisionsTable {
  transaction_id: string;
  network: CurrencyType;
  environment: Environment;
  action: "release" | "return";
  decided_by: string;
  decided_at: ColumnType<Date, Date | undefined, never>;
  applied_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  intent_id: ColumnType<string | null, string | null | undefined, string | null>;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface DepositTables {
  checkout_sessions: CheckoutSessionsTable;
  held_deposit_decisions: HeldDepositDecisionsTable;
  deposit_wallets: DepositWalletsTable;
  idempotency_keys: IdempotencyKeysTable;
}
