import type { ColumnType, Generated } from "kysely";
import type { Environment } from "../../domain/environment.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0039 (payment links, issue #41). */

type NumericNullable = ColumnType<string | null, string | bigint | null | undefined, string | bigint | null>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface PaymentLinksTable {
  id: string;
  merchant_id: string;
  environment: Environment;
  title: string;
  description: string | null;
  /** Token amount in base units; null for a fiat-priced or open-amount link. */
  amount: NumericNullable;
  /** The fiat price as the merchant gave it (a decimal); with `price_currency`. */
  price_amount: NumericNullable;
  price_currency: string | null;
  min_amount: NumericNullable;
  max_amount: NumericNullable;
  currency_types: string[];
  order_id_prefix: string | null;
  metadata: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  max_payments: number | null;
  expires_at: NullableTimestamp;
  success_url: string | null;
  active: Generated<boolean>;
  sessions_opened: Generated<number>;
  deactivated_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface LinkTables {
  payment_links: PaymentLinksTable;
}
