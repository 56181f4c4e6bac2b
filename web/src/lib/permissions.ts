/**
 * Team accounts (issue #21): what the signed-in member's role may do decides what the dashboard
 * shows. The server enforces every permission (403 `FORBIDDEN`); the dashboard only hides what
 * would be refused, from the `permissions` of `GET /api/v1/auth/me` (for the current environment).
 *
 * No React here (and imports with an explicit extension): the tests import this file.
 */
import type { components } from "../../../packages/sdk/src/generated/api.js";
import { MEMBER_ROLES } from "../../../packages/sdk/src/generated/enums.js";

export type Permission = components["schemas"]["Permission"];
export type MemberRole = components["schemas"]["MemberRole"];
export type AssignableRole = Exclude<MemberRole, "owner">;

/** The roles an invitation or a role change can give (ownership only moves by transfer). */
export const ASSIGNABLE_ROLES: readonly AssignableRole[] = MEMBER_ROLES.filter(
  (r): r is AssignableRole => r !== "owner",
);

/** One line per role, for the invite form and the Team screen. */
export const ROLE_SUMMARY = {
  owner: "everything, including handing ownership to another member",
  admin: "everything but transferring ownership",
  developer: "API keys and webhooks; reads money, moves it in the sandbox only",
  finance: "approves withdrawals, sends payouts, exports; no API keys or webhooks",
  viewer: "reads balances, transactions and settings; changes nothing",
} satisfies Record<MemberRole, string>;

/**
 * Whether `permissions` include `permission`. `undefined` (a server that does not send them yet)
 * allows everything: the server still refuses what the role may not do.
 */
export function can(permissions: readonly Permission[] | undefined, permission: Permission): boolean {
  return permissions === undefined || permissions.includes(permission);
}

export interface NavItem {
  to: string;
  label: string;
  /** The permission of the screen's main read: without it the entry is hidden. */
  permission: Permission;
  /** The development mail outbox: only when the server has one. */
  devOnly?: boolean;
}

export const NAV: readonly NavItem[] = [
  { to: "/", label: "Overview", permission: "money:read" },
  { to: "/transactions", label: "Transactions", permission: "money:read" },
  { to: "/sessions", label: "Checkout sessions", permission: "money:read" },
  { to: "/payment-links", label: "Payment links", permission: "money:read" },
  { to: "/withdrawals", label: "Withdrawal requests", permission: "money:read" },
  { to: "/payouts", label: "Payouts", permission: "money:read" },
  { to: "/webhooks", label: "Webhooks", permission: "webhooks:read" },
  { to: "/api-keys", label: "API keys", permission: "api_keys:read" },
  { to: "/settings", label: "Settings", permission: "settings:read" },
  { to: "/team", label: "Team", permission: "members:read" },
  { to: "/audit-log", label: "Audit log", permission: "audit:read" },
  { to: "/mail", label: "Mail outbox", permission: "dev_mail:read", devOnly: true },
];

/** The navigation entries a member with `permissions` sees. */
export function visibleNav(
  permissions: readonly Permission[] | undefined,
  options: { hasOutbox: boolean },
): NavItem[] {
  return NAV.filter((n) => can(permissions, n.permission) && (!n.devOnly || options.hasOutbox));
}

/**
 * Who may change whom (the server's `mayManage`): an owner or an admin anyone but the owner;
 * nobody else. Never oneself.
 */
export function mayManage(actor: MemberRole | null | undefined, target: MemberRole): boolean {
  return (actor === "owner" || actor === "admin") && target !== "owner";
}
