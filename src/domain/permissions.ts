import type { Environment } from "./environment.js";
import { AppError } from "./errors.js";

/**
 * Team accounts (issue #21): the fixed set of member roles and what each may do. Every dashboard
 * route of a merchant declares the one permission it needs (`config.permission`); one check in the
 * dashboard verifier enforces it (`http/plugins/dashboard-auth.ts`); the dashboard hides what the
 * role cannot do from the `permissions` of `GET /api/v1/auth/me`. The matrix is documented in
 * docs/permissions.md and tested route by route from the OpenAPI document
 * (test/http/role-matrix.test.ts, test/http/principal-matrix.test.ts).
 *
 * One principal model (issue #34, docs/permissions.md): every credential acts for a person. An API key
 * pair acts for the member who holds its secret (its creator, or the owner or admin who took it
 * over with a new secret), with that
 * member's current role: the same check (`assertRoleAllows`) on both channels.
 */

export const MEMBER_ROLES = ["owner", "admin", "developer", "finance", "viewer"] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];
/** The roles an invitation or a role change can give: ownership only moves by transfer. */
export const ASSIGNABLE_ROLES = ["admin", "developer", "finance", "viewer"] as const;
export type AssignableRole = (typeof ASSIGNABLE_ROLES)[number];

export const PERMISSIONS = [
  /** Balances, volume, transactions, withdrawal requests and payouts (reads). */
  "money:read",
  /** Create checkout sessions, deposit wallets and payment links (and deactivate links). */
  "payments:create",
  /** Sandbox test payments. */
  "sandbox:pay",
  /** The CSV export of transactions. */
  "exports:read",
  /** Request a withdrawal to an end user's address (API-key channel): money leaves. */
  "withdrawals:create",
  /** Approve or reject withdrawal requests. */
  "withdrawals:approve",
  /** Send a payout from the dashboard. */
  "payouts:create",
  /** Release or return a held deposit (a frozen or refused sender, README.md#frozen-funds). */
  "deposits:review",
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
    "withdrawals:create",
    "withdrawals:approve",
    "payouts:create",
  ],
  viewer: [...READS],
};

/** What a role gains in sandbox only. */
const SANDBOX_EXTRA: Partial<Record<MemberRole, readonly Permission[]>> = {
  developer: ["withdrawals:create", "withdrawals:approve", "payouts:create", "exports:read"],
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

/** Why an API key pair is refused (`details.reason` of the 403, docs/permissions.md). */
export type KeyOwnerRefusal = "key_owner_removed" | "key_owner_role";

/**
 * Who is asking, for the one permission check: a dashboard session's member (`session`), or the
 * member an API key pair acts for (`api_key`; `role` null: that member was removed).
 */
export interface Acting {
  via: "session" | "api_key";
  role: MemberRole | null;
}

/**
 * The one permission check of both channels: the acting member's role against the route's
 * permission in the request's environment. A route without a permission is refused (fail closed:
 * start-up refuses to register one anyway). Throws 403 FORBIDDEN with `details.permission` and
 * `details.role`; on the API-key channel also `details.reason` (`key_owner_removed`,
 * `key_owner_role`).
 */
export function assertRoleAllows(
  who: Acting,
  permission: Permission | undefined,
  environment: Environment,
): asserts who is Acting & { role: MemberRole } {
  if (who.role !== null && permission !== undefined && roleAllows(who.role, permission, environment)) return;
  const details = { permission: permission ?? null, role: who.role };
  if (who.via === "session")
    throw new AppError("FORBIDDEN", `Your role (${who.role ?? "none"}) does not allow this.`, details);
  if (who.role === null)
    throw new AppError(
      "FORBIDDEN",
      "The member this API key pair acts for is no longer a member of the merchant; an owner or admin can reassign the pair.",
      { ...details, reason: "key_owner_removed" satisfies KeyOwnerRefusal },
    );
  throw new AppError(
    "FORBIDDEN",
    `This API key pair acts for a ${who.role}, whose role does not allow this in ${environment}.`,
    { ...details, reason: "key_owner_role" satisfies KeyOwnerRefusal },
  );
}

/**
 * Who may take over a key pair (issue #34): a pair acts for whoever holds its secret, so a
 * reassignment issues a new secret to the actor and makes the pair act for the actor itself; a
 * pair is never made to act for someone else (that member mints its own). Only an owner or an
 * admin, and never taking a pair from a member it could not manage (an admin never takes the
 * owner's). `holder` is the member the pair acts for now, null when that member was removed (or
 * the operator issued it); `targetId` the member asked for, which must be the actor.
 */
export function mayReassignKey(
  actor: { id: string; role: MemberRole },
  holder: { id: string; role: MemberRole } | null,
  targetId: string,
): boolean {
  if (actor.role !== "owner" && actor.role !== "admin") return false;
  if (targetId !== actor.id) return false;
  return holder === null || holder.id === actor.id || mayManage(actor.role, holder.role);
}
