import type { Generated, Selectable } from "kysely";
import type { Environment } from "../../domain/environment.js";
import type { Timestamp } from "./common.js";

/** Tables of migrations 0003 and 0010 (webhooks). */

export type WebhookEventType = "deposit" | "withdrawal" | "payout" | "test";
export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookEndpointsTable {
  merchant_id: string;
  environment: Environment;
  url: string | null;
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  updated_at: Timestamp;
}

export interface WebhookEventsTable {
  id: string;
  merchant_id: string;
  environment: Environment;
  transaction_id: string;
  type: WebhookEventType;
  transaction_status: string;
  is_test: Generated<boolean>;
  url_override: string | null;
  url: string | null;
  body: string;
  delivery_status: Generated<DeliveryStatus>;
  attempts: Generated<number>;
  auto_attempts: Generated<number>;
  /** The shown copy of `webhook_due.next_attempt_at` (null unless pending). */
  next_attempt_at: Date | null;
  /** Lease of a manual retry of a delivered or failed event (a pending event's is in webhook_due). */
  locked_by: string | null;
  locked_until: Date | null;
  last_attempt_at: Date | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  delivered_at: Date | null;
}

/** Migration 0010: one row per pending event — when it is due and who holds it (its lease). */
export interface WebhookDueTable {
  event_id: string;
  next_attempt_at: Date;
  locked_by: string | null;
  locked_until: Date | null;
}

export interface WebhookAttemptsTable {
  id: Generated<bigint>;
  event_id: string;
  attempt_number: number;
  manual: Generated<boolean>;
  started_at: Date;
  url: string | null;
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  response_body: string | null;
  worker: string | null;
}

export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_due: WebhookDueTable;
  webhook_attempts: WebhookAttemptsTable;
}

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookEventRow = Selectable<WebhookEventsTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
