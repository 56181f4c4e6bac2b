import type { Environment } from "./environment.js";

/**
 * Team accounts (issue #21): the fixed set of member roles and what each may do. Every dashboard
 * route of a merchant declares the one permission it needs (`config.permission`); one check in the
 * dashboard verifier enforces it (`http/plugins/dashboard-auth.ts`); the dashboard hides what the
 * role cannot do from the `permissions` of `GET /api/v1/auth/me`. The matrix is documented in
 * docs/permissions.md and tested route by route from the OpenAPI document
 * (test/http/role-matrix.test.ts). The API-key channel is the merchant itself: it has no role.
 */

export const MEMBER_ROLES = ["owner", "admin", "developer", "finance", "viewer"] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];
/** The roles an invitation or a role change can give: ownership only moves by transfer. */
export const ASSIGNABLE_ROLES = ["admin", "developer", "finance", "viewer"] as const;
export type AssignableRole = (typeof ASSIGNABLE_ROLES)[number];

export const PERMISSIONS = [
  /** Balances, volume, transactions, withdrawal requests and payouts (reads). */
  "money:read",
  /** Create checkout sessions and deposit wallets. */
  "payments:create",
  /** Sandbox test payments. */
  "sandbox:pay",
  /** The CSV export of transactions. */
  "exports:read",
  /** Approve or reject withdrawal requests. */
  "withdrawals:approve",
  /** Send a payout from the dashboard. */
  "payouts:create",
  "api_keys:read",
  "api_keys:write",
  /** Webhook events and deliveries (reads). */
  "webhooks:read",
  /** Webhook URL, secret (read and rotate), test sends and retries. */
  "webhooks:write",
  "settings:read",
  /** Settings: auto-withdraw, thresholds (four-eyes included), IP allowlist, tolerance. */
  "settings:write",
  "audit:read",
  "members:read",
  /** Invite, revoke invitations, change roles, remove members. */
  "members:write",
  "ownership:transfer",
  /** The local mail outbox (development only; each login reads its own mails). */
  "dev_mail:read",
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const ALL: readonly Permission[] = PERMISSIONS;
const READS: readonly Permission[] = ["money:read", "settings:read", "dev_mail:read"];

/**
 * What each role may do. `developer` moves money only in sandbox (`SANDBOX_EXTRA`): it is
 * read-only on production money.
 */
const GRANTS: Record<MemberRole, readonly Permission[]> = {
  owner: ALL,
  admin: ALL.filter((p) => p !== "ownership:transfer"),
  developer: [
    ...READS,
    "payments:create",
    "sandbox:pay",
    "api_keys:read",
    "api_keys:write",
    "webhooks:read",
    "webhooks:write",
  ],
  finance: [
    ...READS,
    "payments:create",
    "sandbox:pay",
    "exports:read",
    "withdrawals:approve",
    "payouts:create",
  ],
  viewer: [...READS],
};

/** What a role gains in sandbox only. */
const SANDBOX_EXTRA: Partial<Record<MemberRole, readonly Permission[]>> = {
  developer: ["withdrawals:approve", "payouts:create", "exports:read"],
};

export function isMemberRole(value: unknown): value is MemberRole {
  return typeof value === "string" && (MEMBER_ROLES as readonly string[]).includes(value);
}

export function roleAllows(role: MemberRole, permission: Permission, environment: Environment): boolean {
  if (GRANTS[role].includes(permission)) return true;
  return environment === "sandbox" && (SANDBOX_EXTRA[role]?.includes(permission) ?? false);
}

/** Every permission of a role in an environment, in the order of `PERMISSIONS`. */
export function permissionsOf(role: MemberRole, environment: Environment): Permission[] {
  return PERMISSIONS.filter((p) => roleAllows(role, p, environment));
}

/**
 * Who may change whom: an owner anyone but itself; an admin anyone but the owner (and never to
 * owner); nobody else. Ownership moves only by `transferOwnership`.
 */
export function mayManage(actor: MemberRole, target: MemberRole): boolean {
  if (actor === "owner") return target !== "owner";
  if (actor === "admin") return target !== "owner";
  return false;
}
