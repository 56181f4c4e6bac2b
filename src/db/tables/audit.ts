import type { ColumnType, Generated, Selectable } from "kysely";
import type { Timestamp } from "./common.js";

/** Table of migration 0017 (the audit log; append-only). */

export interface AuditLogTable {
  /** int8: the driver reads it as bigint. */
  id: ColumnType<bigint | number, never, never>;
  merchant_id: string | null;
  environment: "production" | "sandbox" | null;
  actor_type: "user" | "api_key" | "system";
  actor_id: string | null;
  actor_email: string | null;
  actor_role: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  details: ColumnType<Record<string, unknown>, string | undefined, never>;
  client_ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: Timestamp;
}

export type AuditLogRow = Selectable<AuditLogTable>;

/** Migration 0026: the security notifications to mail (docs/merchants/authentication.md#security-notifications), one row per mail. */
export interface SecurityNotificationsTable {
  id: ColumnType<bigint | number, never, never>;
  audit_id: bigint | number | string;
  merchant_id: string | null;
  recipient: string;
  subject: string;
  body: string;
  created_at: Date;
  next_attempt_at: Date;
  attempts: Generated<number>;
  last_error: string | null;
  sent_at: Date | null;
}

export interface AuditTables {
  audit_log: AuditLogTable;
  security_notifications: SecurityNotificationsTable;
}
