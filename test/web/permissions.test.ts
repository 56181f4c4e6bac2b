import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  MEMBER_ROLES,
  PERMISSIONS,
  permissionsOf,
  ASSIGNABLE_ROLES as SERVER_ASSIGNABLE,
  mayManage as serverMayManage,
} from "../../src/domain/permissions.js";
import { ASSIGNABLE_ROLES, can, mayManage, NAV, visibleNav } from "../../web/src/lib/permissions.js";
import { ROOT } from "./build.js";

// Team accounts (issue #21): the dashboard hides what a role cannot do, from the `permissions` of
// /auth/me. These checks hold the dashboard's side (web/src/lib/permissions.ts) to the server's
// matrix (src/domain/permissions.ts), role by role, in both environments.

const ENVIRONMENTS = ["sandbox", "production"] as const;

function navOf(role: (typeof MEMBER_ROLES)[number], env: (typeof ENVIRONMENTS)[number]): string[] {
  return visibleNav(permissionsOf(role, env), { hasOutbox: true }).map((n) => n.label);
}

describe("hiding by permission", () => {
  it("owner and admin see every screen; only members:read sees Team, only audit:read the Audit log", () => {
    const all = NAV.map((n) => n.label);
    for (const env of ENVIRONMENTS) {
      expect(navOf("owner", env)).toEqual(all);
      expect(navOf("admin", env)).toEqual(all);
      for (const role of ["developer", "finance", "viewer"] as const) {
        expect(navOf(role, env), `${role} ${env}`).not.toContain("Team");
        expect(navOf(role, env), `${role} ${env}`).not.toContain("Audit log");
      }
    }
  });

  it("finance sees money screens but no API keys or Webhooks; a viewer neither; a developer both", () => {
    for (const env of ENVIRONMENTS) {
      const finance = navOf("finance", env);
      expect(finance).toEqual(expect.arrayContaining(["Overview", "Withdrawal requests", "Payouts"]));
      expect(finance).not.toContain("API keys");
      expect(finance).not.toContain("Webhooks");
      const viewer = navOf("viewer", env);
      expect(viewer).not.toContain("API keys");
      expect(viewer).not.toContain("Webhooks");
      expect(navOf("developer", env)).toEqual(expect.arrayContaining(["API keys", "Webhooks"]));
    }
  });

  it("the action buttons follow the role: a viewer never approves nor sends; a developer only in the sandbox", () => {
    for (const env of ENVIRONMENTS) {
      const viewer = permissionsOf("viewer", env);
      for (const p of [
        "withdrawals:approve",
        "payouts:create",
        "exports:read",
        "settings:write",
        "members:write",
      ] as const)
        expect(can(viewer, p), `viewer ${p} ${env}`).toBe(false);
      expect(can(permissionsOf("finance", env), "withdrawals:approve")).toBe(true);
      expect(can(permissionsOf("owner", env), "ownership:transfer")).toBe(true);
      expect(can(permissionsOf("admin", env), "ownership:transfer")).toBe(false);
    }
    expect(can(permissionsOf("developer", "sandbox"), "withdrawals:approve")).toBe(true);
    expect(can(permissionsOf("developer", "production"), "withdrawals:approve")).toBe(false);
  });

  it("only the owner and admins see the release / return of a held deposit (deposits:review), in both environments", () => {
    for (const env of ENVIRONMENTS)
      for (const role of MEMBER_ROLES)
        expect(can(permissionsOf(role, env), "deposits:review"), `${role} ${env}`).toBe(
          role === "owner" || role === "admin",
        );
  });

  it("the development outbox shows only when the server has one; no permissions (an older server) hide nothing", () => {
    expect(
      visibleNav(permissionsOf("owner", "sandbox"), { hasOutbox: false }).map((n) => n.label),
    ).not.toContain("Mail outbox");
    expect(visibleNav(undefined, { hasOutbox: true })).toEqual([...NAV]);
    expect(can(undefined, "members:write")).toBe(true);
    expect(can([], "money:read")).toBe(false);
  });

  it("names only the server's permissions, and agrees with it on who may manage whom", () => {
    for (const n of NAV) expect(PERMISSIONS).toContain(n.permission);
    expect([...ASSIGNABLE_ROLES]).toEqual([...SERVER_ASSIGNABLE]);
    for (const actor of MEMBER_ROLES)
      for (const target of MEMBER_ROLES)
        expect(mayManage(actor, target), `${actor} → ${target}`).toBe(serverMayManage(actor, target));
    expect(mayManage(null, "viewer")).toBe(false);
  });

  it("each screen's route asks for the permission of its navigation entry (web/src/main.tsx)", async () => {
    const main = await readFile(path.join(ROOT, "web/src/main.tsx"), "utf8");
    const routes = new Map(
      [...main.matchAll(/path="(\/[\w-]*)"\s*element=\{\s*<RequireSession permission="([\w:]+)"/g)].map(
        (m) => [m[1], m[2]],
      ),
    );
    for (const n of NAV) expect(routes.get(n.to), n.to).toBe(n.permission);
  });
});
