import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import {
  accept,
  addMember,
  type Headers,
  invite,
  mailedInvitation,
  otpFor,
  PASSWORD,
  registerOwner,
} from "./support.js";

// Issue #21 "Members": invitations (single use, 7 days, revocable), roles enforced per route and
// changed live, removal ending sessions at once, ownership transfer with step-up, and one audit
// record per member action.

let svc: TestService;
let base: string;
let owner: Awaited<ReturnType<typeof registerOwner>>;

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  base = svc.urls.sandbox;
  owner = await registerOwner(svc);
});
afterAll(async () => {
  await svc?.close();
});

const me = (headers: Headers) => call(base, "/api/v1/auth/me", { headers });

async function auditActions(merchantId: string, since: Date) {
  const rows = await svc.database.db
    .selectFrom("audit_log")
    .select(["action", "actor_id", "actor_role", "target_type", "target_id", "details"])
    .where("merchant_id", "=", merchantId)
    .where("created_at", ">=", since)
    .orderBy("id")
    .execute();
  return rows;
}

describe("invitations", () => {
  it("the owner invites by e-mail; the invitee sets a password, joins with the role and is signed in", async () => {
    const since = new Date();
    const email = `finance-${Date.now()}@example.com`;
    const otp = await otpFor(base, owner.bearer);
    const r = await invite(base, owner.bearer, { email, role: "finance", otp });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({ email, role: "finance", status: "pending", invitedBy: owner.userId });
    const expires = Date.parse(r.body.data.expiresAt) - Date.parse(r.body.data.createdAt);
    expect(expires).toBe(7 * 24 * 3600_000);

    const mail = await mailedInvitation(svc, email);
    expect(r.text).not.toContain(mail.token); // the token is only mailed
    expect(mail.body).toContain(`/accept-invite#token=${mail.token}`);
    const a = await accept(base, mail.token);
    expect(a.status, a.text).toBe(200);
    expect(a.body.data.user).toMatchObject({ email, memberRole: "finance", merchantId: owner.merchantId });
    const bearer = { authorization: `Bearer ${a.body.data.accessToken}`, "x-environment": "sandbox" };
    const who = await me(bearer);
    expect(who.body.data.permissions).toContain("withdrawals:approve");
    expect(who.body.data.permissions).not.toContain("api_keys:read");
    // The same link twice: refused.
    const again = await accept(base, mail.token);
    expect(again.status).toBe(400);
    expect(again.body.error.details.fields[0].field).toBe("token");

    const members = await call(base, "/api/v1/dashboard/members", { headers: owner.bearer });
    expect(members.status).toBe(200);
    expect(members.body.data.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([
      [owner.email, "owner"],
      [email, "finance"],
    ]);
    const invitations = await call(base, "/api/v1/dashboard/invitations", { headers: owner.bearer });
    expect(invitations.body.data[0]).toMatchObject({ email, status: "accepted" });

    const audit = await auditActions(owner.merchantId, since);
    expect(audit.map((x) => x.action)).toEqual(["member.invite", "member.join"]);
    expect(audit[0]).toMatchObject({
      actor_id: owner.userId,
      actor_role: "owner",
      target_type: "invitation",
    });
    expect(audit[0]?.details).toEqual({ email, role: "finance" });
    expect(audit[1]).toMatchObject({ actor_id: a.body.data.user.id, actor_role: "finance" });
  });

  it("needs the step-up code (account-wide, sandbox too); a bad role or e-mail is a 400", async () => {
    const email = `x-${Date.now()}@example.com`;
    const none = await invite(base, owner.bearer, { email, role: "viewer" });
    expect(none.status).toBeGreaterThanOrEqual(400);
    expect(none.status).toBeLessThan(500);
    const owners = await invite(base, owner.bearer, { email, role: "owner", otp: "123456" });
    expect(owners.status).toBe(400);
    const taken = await invite(base, owner.bearer, {
      email: owner.email,
      role: "viewer",
      otp: await otpFor(base, owner.bearer),
    });
    expect(taken.status, taken.text).toBe(400);
    expect(taken.body.error.details.fields[0]).toEqual({
      field: "email",
      message: "already has a stablegate login",
    });
  });

  it("a revoked, an expired, or a superseded invitation cannot be accepted", async () => {
    const since = new Date();
    const email = `r-${Date.now()}@example.com`;
    const first = await invite(base, owner.bearer, {
      email,
      role: "viewer",
      otp: await otpFor(base, owner.bearer),
    });
    const firstToken = (await mailedInvitation(svc, email)).token;
    // Inviting the same address again revokes the pending one.
    const second = await invite(base, owner.bearer, {
      email,
      role: "viewer",
      otp: await otpFor(base, owner.bearer),
    });
    expect(second.status).toBe(201);
    const secondToken = (await mailedInvitation(svc, email)).token;
    expect(secondToken).not.toBe(firstToken);
    expect((await accept(base, firstToken)).status).toBe(400);

    const revoke = await call(base, `/api/v1/dashboard/invitations/${second.body.data.id}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(revoke.status, revoke.text).toBe(200);
    expect(revoke.body.data.status).toBe("revoked");
    expect((await accept(base, secondToken)).status).toBe(400);
    const twice = await call(base, `/api/v1/dashboard/invitations/${second.body.data.id}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(twice.status).toBe(409);

    const third = await invite(base, owner.bearer, {
      email,
      role: "viewer",
      otp: await otpFor(base, owner.bearer),
    });
    const thirdToken = (await mailedInvitation(svc, email)).token;
    await svc.database.db
      .updateTable("member_invitations")
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where("id", "=", third.body.data.id)
      .execute();
    expect((await accept(base, thirdToken)).status).toBe(400);
    const list = await call(base, "/api/v1/dashboard/invitations?limit=3", { headers: owner.bearer });
    expect(list.body.data.map((i: { status: string }) => i.status)).toEqual([
      "expired",
      "revoked",
      "revoked",
    ]);
    expect(first.body.data.id).toBe(list.body.data[2].id);

    const actions = (await auditActions(owner.merchantId, since)).map((x) => x.action);
    expect(actions).toEqual(["member.invite", "member.invite", "member.invitation_revoke", "member.invite"]);
  });

  it("refuses a forged or malformed token and a weak password with 400, never a 500", async () => {
    for (const token of ["ivt_nope", "x", `ivt_${"a".repeat(150)}`, "prt_abc", "inv_abc"]) {
      const r = await accept(base, token);
      expect(r.status, token).toBe(400);
    }
    const weak = await accept(base, "ivt_whatever", "short");
    expect(weak.status).toBe(400);
  });
});

describe("roles", () => {
  it("a member gets 403 naming the permission its role lacks; a role change applies to its next request", async () => {
    const since = new Date();
    const dev = await addMember(svc, owner.bearer, "viewer");
    const keys = await call(base, "/api/v1/dashboard/api-keys", { headers: dev.bearer });
    expect(keys.status).toBe(403);
    expect(keys.body.error).toMatchObject({
      code: "FORBIDDEN",
      details: { permission: "api_keys:read", role: "viewer" },
    });

    const otp = await otpFor(base, owner.bearer);
    const change = await call(base, `/api/v1/dashboard/members/${dev.userId}`, {
      method: "PATCH",
      headers: owner.bearer,
      json: { role: "developer", otp },
    });
    expect(change.status, change.text).toBe(200);
    expect(change.body.data.role).toBe("developer");
    // Same session, no new sign-in: the role is read on every request.
    expect((await call(base, "/api/v1/dashboard/api-keys", { headers: dev.bearer })).status).toBe(200);
    // A developer moves money in sandbox only.
    const prodPayouts = await call(base, "/api/v1/dashboard/payouts", {
      headers: { ...dev.bearer, "x-environment": "production" },
      json: { amount: 1, currencyType: "USDT-TRC20", walletAddress: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW" },
    });
    expect(prodPayouts.status).toBe(403);
    expect(prodPayouts.body.error.details.permission).toBe("payouts:create");
    const sandboxMe = await me(dev.bearer);
    expect(sandboxMe.body.data.permissions).toContain("payouts:create");
    const prodMe = await me({ ...dev.bearer, "x-environment": "production" });
    expect(prodMe.body.data.permissions).not.toContain("payouts:create");

    const rows = (await auditActions(owner.merchantId, since)).filter(
      (x) => x.action === "member.role_change",
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ target_id: dev.userId });
    expect(rows[0]?.details).toMatchObject({ before: "viewer", after: "developer" });
  });

  it("a member below admin cannot manage the team; an admin cannot touch the owner; nobody is made owner by a role change", async () => {
    const finance = await addMember(svc, owner.bearer, "finance");
    const admin = await addMember(svc, owner.bearer, "admin");
    const byFinance = await invite(base, finance.bearer, { email: "y@example.com", role: "viewer" });
    expect(byFinance.status).toBe(403);
    expect(byFinance.body.error.details.permission).toBe("members:write");
    const removeOwner = await call(base, `/api/v1/dashboard/members/${owner.userId}`, {
      method: "DELETE",
      headers: admin.bearer,
    });
    expect(removeOwner.status).toBe(403);
    const demoteOwner = await call(base, `/api/v1/dashboard/members/${owner.userId}`, {
      method: "PATCH",
      headers: admin.bearer,
      json: { role: "viewer", otp: await otpFor(base, admin.bearer) },
    });
    expect(demoteOwner.status).toBe(403);
    const toOwner = await call(base, `/api/v1/dashboard/members/${finance.userId}`, {
      method: "PATCH",
      headers: owner.bearer,
      json: { role: "owner", otp: "000000" },
    });
    expect(toOwner.status).toBe(400);
    const transferByAdmin = await call(
      base,
      `/api/v1/dashboard/members/${finance.userId}/transfer-ownership`,
      {
        headers: admin.bearer,
        json: { otp: await otpFor(base, admin.bearer) },
      },
    );
    expect(transferByAdmin.status).toBe(403);
    expect(transferByAdmin.body.error.details.permission).toBe("ownership:transfer");
    // Another merchant's member: not found, whoever asks.
    const other = await registerOwner(svc);
    const cross = await call(base, `/api/v1/dashboard/members/${finance.userId}`, {
      method: "DELETE",
      headers: other.bearer,
    });
    expect(cross.status).toBe(404);
  });
});

describe("removal and ownership", () => {
  it("a removed member's session is refused on its next request, and it cannot sign in again", async () => {
    const since = new Date();
    const m = await addMember(svc, owner.bearer, "finance");
    expect((await me(m.bearer)).status).toBe(200);
    const removed = await call(base, `/api/v1/dashboard/members/${m.userId}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(removed.status, removed.text).toBe(200);
    const next = await me(m.bearer);
    expect(next.status).toBe(401);
    const read = await call(base, "/api/v1/dashboard/balance", { headers: m.bearer });
    expect(read.status).toBe(401);
    const login = await call(base, "/api/v1/auth/login", { json: { email: m.email, password: PASSWORD } });
    expect(login.status).toBe(401);
    const members = await call(base, "/api/v1/dashboard/members?limit=100", { headers: owner.bearer });
    expect(members.body.data.map((x: { id: string }) => x.id)).not.toContain(m.userId);
    const gone = await call(base, `/api/v1/dashboard/members/${m.userId}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(gone.status).toBe(404);
    const rows = (await auditActions(owner.merchantId, since)).filter((x) => x.action === "member.remove");
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ target_id: m.userId, actor_id: owner.userId });
    // The address is free again: it can be invited anew.
    const again = await invite(base, owner.bearer, {
      email: m.email,
      role: "viewer",
      otp: await otpFor(base, owner.bearer),
    });
    expect(again.status, again.text).toBe(201);
  });

  it("the owner transfers ownership with step-up: exactly one owner before and after", async () => {
    const o = await registerOwner(svc);
    const heir = await addMember(svc, o.bearer, "admin");
    const noCode = await call(base, `/api/v1/dashboard/members/${heir.userId}/transfer-ownership`, {
      headers: o.bearer,
      json: {},
    });
    expect(noCode.status).toBeGreaterThanOrEqual(400);
    expect(noCode.status).toBeLessThan(500);
    const t = await call(base, `/api/v1/dashboard/members/${heir.userId}/transfer-ownership`, {
      headers: o.bearer,
      json: { otp: await otpFor(base, o.bearer) },
    });
    expect(t.status, t.text).toBe(200);
    expect(t.body.data.newOwner).toMatchObject({ id: heir.userId, role: "owner" });
    expect(t.body.data.formerOwner).toMatchObject({ id: o.userId, role: "admin" });
    const members = await call(base, "/api/v1/dashboard/members", { headers: heir.bearer });
    const roles = members.body.data.map((x: { role: string }) => x.role).sort();
    expect(roles).toEqual(["admin", "owner"]);
    // The former owner is an admin now: it can no longer transfer, and the new owner cannot be removed by it.
    const back = await call(base, `/api/v1/dashboard/members/${heir.userId}/transfer-ownership`, {
      headers: o.bearer,
      json: { otp: await otpFor(base, o.bearer) },
    });
    expect(back.status).toBe(403);
    const audit = (await auditActions(o.merchantId, new Date(0))).filter(
      (x) => x.action === "ownership.transfer",
    );
    expect(audit).toHaveLength(1);
  });
});
