/**
 * The audit log's actions (issue #21): one name per kind of action, `<area>.<verb>`. A record is
 * written for each; the names are the API's `action` filter and the dashboard's labels.
 */
export const AUDIT_ACTIONS = [
  "auth.sign_in",
  "auth.sign_in_failed",
  "auth.password_change",
  "auth.password_reset",
  "auth.two_factor_enable",
  "auth.two_factor_disable",
  "api_key.create",
  "api_key.rotate",
  "api_key.reassign",
  "api_key.revoke",
  "settings.update",
  "settings.branding_update",
  "webhook.url_update",
  "webhook.secret_rotate",
  "payout.create",
  "withdrawal.approve",
  "withdrawal.reject",
  "deposit.release",
  "deposit.return",
  "screening.decision",
  "export.transactions",
  "member.invite",
  "member.invitation_revoke",
  "member.join",
  "member.role_change",
  "member.remove",
  "ownership.transfer",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Who acted: a dashboard login (with its role), an API key, or the gateway itself (`system`: its id
 * names the part, e.g. `screening`, whose decisions are recorded, issue #40).
 */
export type AuditActor =
  | { type: "user"; id: string | null; email: string | null; role: string | null }
  | { type: "api_key"; id: string }
  | { type: "system"; id: string };

/** One action to record: what, by whom, on what, from where. */
export interface AuditEntry {
  merchantId: string | null;
  environment: "production" | "sandbox" | null;
  actor: AuditActor;
  action: AuditAction;
  target?: { type: string; id: string | null } | undefined;
  details?: Record<string, unknown> | undefined;
  clientIp: string | null;
  userAgent: string | null;
  requestId: string | null;
}
