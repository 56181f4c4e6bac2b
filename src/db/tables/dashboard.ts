import type { Generated, Selectable } from "kysely";
import type { MemberRole } from "../../domain/permissions.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0005 (dashboard channel: logins, sessions, OTPs, password resets, mail outbox). */

export type DashboardRole = "merchant" | "admin";
export type OtpPurpose = "payout" | "password_change" | "sensitive";
export type SessionRevokedReason =
  | "logout"
  | "reuse"
  | "password_change"
  | "password_reset"
  | "member_removed";
/** How a session receives access tokens: the httpOnly cookie only, or also the JSON body (0014). */
export type TokenDelivery = "cookie" | "bearer";

export interface DashboardUsersTable {
  id: string;
  merchant_id: string | null;
  email: string;
  password_hash: string;
  role: DashboardRole;
  /** The member's role in its merchant (0018); null for a platform admin. */
  member_role: MemberRole | null;
  /** Set when the member was removed (0018): no sign-in, no session. */
  removed_at: Date | null;
  totp_secret: string | null;
  totp_enabled: Generated<boolean>;
  totp_last_step: bigint | null;
  /** Unused since migration 0013 (login_throttles): the account itself is never locked. */
  failed_logins: Generated<number>;
  /** Unused since migration 0013 (login_throttles). */
  locked_until: Date | null;
  password_changed_at: Timestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface DashboardSessionsTable {
  id: string;
  user_id: string;
  created_at: Timestamp;
  last_used_at: Timestamp;
  expires_at: Date | string;
  revoked_at: Date | null;
  revoked_reason: SessionRevokedReason | null;
  token_delivery: Generated<TokenDelivery>;
}

export interface DashboardRefreshTokensTable {
  token_hash: Buffer | Uint8Array;
  session_id: string;
  created_at: Timestamp;
  used_at: Date | null;
}

export interface DashboardOtpsTable {
  id: string;
  user_id: string;
  /** Migration 0026: the dashboard session that requested the code, the only one that can use it. */
  session_id: string | null;
  purpose: OtpPurpose;
  code_hash: Buffer | Uint8Array;
  attempts: Generated<number>;
  expires_at: Date | string;
  consumed_at: Date | null;
  created_at: Timestamp;
}

export interface DashboardPasswordResetsTable {
  token_hash: Buffer | Uint8Array;
  user_id: string;
  expires_at: Date | string;
  used_at: Date | null;
  created_at: Timestamp;
}

/** Migration 0013: failed sign-ins per (account, client IP) and per client IP (`auth/lockout.ts`). */
export interface LoginThrottlesTable {
  /** SHA-256 (hex) of the e-mail tried, or '*' for the per-IP budget across accounts. */
  subject: string;
  ip: string;
  failures: number;
  last_failure_at: Date;
  locked_until: Date | null;
}

export interface MailOutboxTable {
  id: string;
  recipient: string;
  subject: string;
  body: string;
  created_at: Timestamp;
}

export interface DashboardTables {
  dashboard_users: DashboardUsersTable;
  dashboard_sessions: DashboardSessionsTable;
  dashboard_refresh_tokens: DashboardRefreshTokensTable;
  dashboard_otps: DashboardOtpsTable;
  dashboard_password_resets: DashboardPasswordResetsTable;
  mail_outbox: MailOutboxTable;
  login_throttles: LoginThrottlesTable;
}

export type DashboardUser = Selectable<DashboardUsersTable>;
export type MailOutboxRow = Selectable<MailOutboxTable>;
