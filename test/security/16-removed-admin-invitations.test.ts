import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { accept, addMember, invite, mailedInvitation, otpFor, registerOwner } from "../team/support.js";

// Issue #34 finding 6 (Medium): an admin invited a friend as admin, was removed, and the friend
// still joined as admin with the pending invitation. docs/decisions/team-accounts.md#members-and-invitations: removing or demoting a member
// revokes the invitations it sent, in the same transaction; accepting checks that the inviter is
// still a member who may grant that role.

let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  owner = await registerOwner(svc);
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

const email = (what: string) => `${what}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;

/** `admin` invites a new address as `role`; returns the mailed token and the invitation id. */
async function inviteAs(adminBearer: Record<string, string>, role: string) {
  const to = email(`friend-${role}`);
  const r = await invite(svc.urls.sandbox, adminBearer, {
    email: to,
    role,
    otp: await otpFor(svc.urls.sandbox, adminBearer),
  });
  expect(r.status, r.text).toBe(201);
  return { id: r.body.data.id as string, token: (await mailedInvitation(svc, to)).token };
}

async function invitationStatus(id: string) {
  const r = await call(svc.urls.sandbox, "/api/v1/dashboard/invitations?limit=100", {
    headers: owner.bearer,
  });
  expect(r.status, r.text).toBe(200);
  return r.body.data.find((i: { id: string }) => i.id === id)?.status;
}

function expectTokenRefused(r: { status: number; body: any; text: string }) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.error.details.fields[0].field).toBe("token");
}

describe("the invitations of a member who loses access", () => {
  it("removing an admin revokes the invitations it sent: its invitee cannot join", async () => {
    const admin = await addMember(svc, owner.bearer, "admin");
    const asAdmin = await inviteAs(admin.bearer, "admin");
    const asViewer = await inviteAs(admin.bearer, "viewer");
    const ownersOwn = await inviteAs(owner.bearer, "viewer");
    const removed = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${admin.userId}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(removed.status, removed.text).toBe(200);
    expect(await invitationStatus(asAdmin.id)).toBe("revoked");
    expect(await invitationStatus(asViewer.id)).toBe("revoked");
    expectTokenRefused(await accept(svc.urls.sandbox, asAdmin.token));
    expectTokenRefused(await accept(svc.urls.sandbox, asViewer.token));
    // Other members' invitations are untouched.
    expect(await invitationStatus(ownersOwn.id)).toBe("pending");
    expect((await accept(svc.urls.sandbox, ownersOwn.token)).status).toBe(200);
  });

  it("demoting an admin revokes the invitations it sent", async () => {
    const admin = await addMember(svc, owner.bearer, "admin");
    const pending = await inviteAs(admin.bearer, "admin");
    const demote = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${admin.userId}`, {
      method: "PATCH",
      headers: owner.bearer,
      json: { role: "developer", otp: await otpFor(svc.urls.sandbox, owner.bearer) },
    });
    expect(demote.status, demote.text).toBe(200);
    expect(await invitationStatus(pending.id)).toBe("revoked");
    expectTokenRefused(await accept(svc.urls.sandbox, pending.token));
  });

  it("an ownership transfer keeps the former owner's invitations (an admin may still grant them)", async () => {
    const other = await registerOwner(svc);
    const pending = await inviteAs(other.bearer, "admin");
    const heir = await addMember(svc, other.bearer, "admin");
    const t = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${heir.userId}/transfer-ownership`, {
      headers: other.bearer,
      json: { otp: await otpFor(svc.urls.sandbox, other.bearer) },
    });
    expect(t.status, t.text).toBe(200);
    const a = await accept(svc.urls.sandbox, pending.token);
    expect(a.status, a.text).toBe(200);
    expect(a.body.data.user.memberRole).toBe("admin");
  });

  it("accepting checks the inviter again: an inviter who lost the right (changed behind the API's back) grants nothing", async () => {
    const admin = await addMember(svc, owner.bearer, "admin");
    const pending = await inviteAs(admin.bearer, "admin");
    // The row changed directly (an operator's SQL, a restore): no revocation ran.
    await svc.database.db
      .updateTable("dashboard_users")
      .set({ member_role: "viewer" })
      .where("id", "=", admin.userId)
      .execute();
    expectTokenRefused(await accept(svc.urls.sandbox, pending.token));
    expect(await invitationStatus(pending.id)).toBe("revoked");

    const admin2 = await addMember(svc, owner.bearer, "admin");
    const pending2 = await inviteAs(admin2.bearer, "developer");
    await svc.database.db
      .updateTable("dashboard_users")
      .set({ removed_at: new Date() })
      .where("id", "=", admin2.userId)
      .execute();
    expectTokenRefused(await accept(svc.urls.sandbox, pending2.token));
  });
});
