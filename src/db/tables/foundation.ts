import type { ColumnType, Generated, Insertable, Selectable, Updateable } from "kysely";
import type { Environment } from "../../domain/environment.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0001 (foundation). */

export interface MerchantsTable {
  id: string;
  email: string;
  company_name: string;
  status: Generated<"active" | "suspended">;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  merchant_id: string;
  environment: Environment;
  api_key: string;
  secret_hash: Buffer | Uint8Array;
  secret_hint: string;
  status: Generated<"active" | "revoked">;
  revoked_reason: "revoked" | "rotated" | null;
  replaced_by: string | null;
  created_at: Timestamp;
  revoked_at: Date | null;
  /**
   * The member the pair acts for (0024): its creator, or whom an owner or admin reassigned it to.
   * Null only for a pair the operator issued to a merchant without members: the merchant's owner.
   */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface MerchantSettingsTable {
  merchant_id: string;
  environment: Environment;
  auto_withdraw: Generated<boolean>;
  auto_approve_threshold: ColumnType<Record<string, string>, string | undefined, string>;
  ip_allowlist: ColumnType<string[], string[] | undefined, string[]>;
  /** Underpayment tolerance in basis points of the amount (0..1000 = 0..10 %). */
  underpayment_tolerance_bp: Generated<number>;
  /** Four-eyes (0018): per currency type, base units as decimal strings; a missing currency = off. */
  dual_approval_threshold: ColumnType<Record<string, string>, string | undefined, string>;
  updated_at: Timestamp;
}

export interface WorkerHeartbeatsTable {
  instance_id: string;
  role: string;
  hostname: string;
  pid: number;
  started_at: Date | string;
  seen_at: Date | string;
}

export interface FoundationTables {
  merchants: MerchantsTable;
  api_keys: ApiKeysTable;
  merchant_settings: MerchantSettingsTable;
  worker_heartbeats: WorkerHeartbeatsTable;
}

export type Merchant = Selectable<MerchantsTable>;
export type NewMerchant = Insertable<MerchantsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type MerchantSettingsRow = Selectable<MerchantSettingsTable>;
export type MerchantSettingsUpdate = Updateable<MerchantSettingsTable>;
