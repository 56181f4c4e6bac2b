import { createHash, randomBytes } from "node:crypto";
import type { AuditRecorder } from "../audit/index.js";
import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import type { TokenDelivery } from "../db/tables/dashboard.js";
import type { MemberInvitation } from "../db/tables/team.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { ListParams } from "../domain/list.js";
import { type AssignableRole, mayManage } from "../domain/permissions.js";
import { findMerchantById } from "../merchants/index.js";
import { type SignedIn, signIn } from "./accounts.js";
import type { AuthKit } from "./kit.js";
import type { MemberActor } from "./members.js";
import { hashPassword, validatePassword } from "./passwords.js";
import { findUserByEmail, findUserById, insertUser } from "./users.js";

/**
 * Invitations (issue #21): an owner or admin invites an e-mail address with a role; the mail holds
 * a single-use link valid 7 days; the invitee sets a password and joins the merchant as a member
 * (and is signed in). An invitation can be revoked until it is accepted; inviting the same address
 * again revokes the pending one (the new mail is the only valid link). A login belongs to one
 * merchant: an address that already has a login cannot be invited.
 */

export const INVITATION_TTL_MS = 7 * 24 * 3600_000;
/** Tokens are `ivt_…`; invitation ids are `inv_…` (an id is not a credential). */
const PREFIX = "ivt_";

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

export type InvitationStatus = "pending" | "accepted" | "revoked" | "expired";

export interface InvitationView {
  id: string;
  email: string;
  role: AssignableRole;
  status: InvitationStatus;
  invitedBy: string;
  expiresAt: string;
  createdAt: string;
}

function statusOf(r: MemberInvitation, now: Date): InvitationStatus {
  if (r.accepted_at) return "accepted";
  if (r.revoked_at) return "revoked";
  return new Date(r.expires_at).getTime() <= now.getTime() ? "expired" : "pending";
}

function present(r: MemberInvitation, now: Date): InvitationView {
  return {
    id: r.id,
    email: r.email,
    role: r.member_role,
    status: statusOf(r, now),
    invitedBy: r.invited_by,
    expiresAt: new Date(r.expires_at).toISOString(),
    createdAt: new Date(r.created_at).toISOString(),
  };
}

/** A page of the merchant's invitations, newest first, whatever their status. */
export async function listInvitations(
  kit: AuthKit,
  merchantId: string,
  page: ListParams,
): Promise<{ rows: InvitationView[]; total: number }> {
  const q = kit.db.selectFrom("member_invitations").where("merchant_id", "=", merchantId);
  const { rows, total } = await paginate(q, page, (x) =>
    x.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"),
  );
  const now = kit.now();
  return { rows: rows.map((r) => present(r, now)), total };
}

/** Invites `email` as `role`; the link is mailed (`acceptUrl(token)`), never returned. */
export async function inviteMember(
  kit: AuthKit,
  actor: MemberActor,
  input: { email: string; role: AssignableRole },
  acceptUrl: (token: string) => string,
  audit?: AuditRecorder,
): Promise<InvitationView> {
  if (!mayManage(actor.role, input.role)) throw AppError.forbidden(`A ${actor.role} cannot invite members.`);
  const email = input.email.trim();
  if (await findUserByEmail(kit.db, email))
    throw AppError.validation([{ field: "email", message: "already has a stablegate login" }]);
  const token = PREFIX + randomBytes(32).toString("base64url");
  const now = kit.now();
  const row = await kit.db.transaction().execute(async (trx) => {
    await trx
      .updateTable("member_invitations")
      .set({ revoked_at: now })
      .where("merchant_id", "=", actor.merchantId)
      .where((eb) => eb(eb.fn("lower", ["email"]), "=", email.toLowerCase()))
      .where("accepted_at", "is", null)
      .where("revoked_at", "is", null)
      .execute();
    const invited = await trx
      .insertInto("member_invitations")
      .values({
        id: newId("inv"),
        merchant_id: actor.merchantId,
        email,
        member_role: input.role,
        token_hash: sha256(token),
        invited_by: actor.userId,
        expires_at: new Date(now.getTime() + INVITATION_TTL_MS),
        accepted_at: null,
        accepted_by: null,
        revoked_at: null,
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await audit?.record(trx, { targetId: invited.id });
    return invited;
  });
  const merchant = await findMerchantById(kit.db, actor.merchantId);
  const company = merchant?.company_name ?? "a merchant";
  await kit.mailer.send({
    to: email,
    subject: `You are invited to ${company} on stablegate`,
    text: [
      `You are invited to join ${company} on stablegate as ${input.role}.`,
      "",
      `Accept within 7 days and choose your password here: ${acceptUrl(token)}`,
      "",
      `Or use this invitation token: ${token}`,
      "",
      "If you did not expect this, ignore this mail.",
    ].join("\n"),
  });
  return present(row, now);
}

/** Revokes a pending invitation of the merchant: its link stops working. */
export async function revokeInvitation(
  kit: AuthKit,
  actor: MemberActor,
  id: string,
  audit?: AuditRecorder,
): Promise<InvitationView> {
  const now = kit.now();
  return kit.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom("member_invitations")
      .selectAll()
      .where("id", "=", id)
      .where("merchant_id", "=", actor.merchantId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) throw AppError.notFound("No invitation with this id.");
    if (statusOf(row, now) !== "pending")
      throw new AppError("INVALID_STATE", `The invitation is ${statusOf(row, now)}, not pending.`);
    const revoked = await trx
      .updateTable("member_invitations")
      .set({ revoked_at: now })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await audit?.record(trx);
    return present(revoked, now);
  });
}

/**
 * The invitee accepts: a new login of the merchant with the invited role and the chosen password,
 * signed in. The token is spent in the transaction that creates the login: of two racing accepts
 * one wins, the other is refused like a used link. An invitation whose inviter is no longer a
 * member who may grant its role is refused like a revoked link (and revoked).
 */
export async function acceptInvitation(
  kit: AuthKit,
  input: { token: string; password: string },
  tokenDelivery: TokenDelivery,
  audit?: AuditRecorder,
): Promise<SignedIn & { merchantId: string; invitationId: string }> {
  const errors = validatePassword(input.password);
  if (errors.length > 0) throw AppError.validation(errors);
  const invalid = () =>
    AppError.validation([{ field: "token", message: "is invalid, used, revoked or expired" }]);
  if (!input.token.startsWith(PREFIX) || input.token.length > 100) throw invalid();
  const passwordHash = await hashPassword(input.password);
  const now = kit.now();
  const userId = newId("usr");
  const tokenHash = sha256(input.token);
  const accepted = await kit.db.transaction().execute(async (trx: Db) => {
    // The inviter must still be a member who may grant the role (issue #34). Its row is locked
    // (shared) before the invitation, in the order removal and role changes lock them (member, then
    // its invitations): a removal or demotion either committed first (the invitation is revoked:
    // refused below) or waits until this accept has committed.
    const sent = await trx
      .selectFrom("member_invitations")
      .select(["invited_by"])
      .where("token_hash", "=", tokenHash)
      .executeTakeFirst();
    if (!sent) throw invalid();
    const inviter = await trx
      .selectFrom("dashboard_users")
      .select(["merchant_id", "member_role", "removed_at"])
      .where("id", "=", sent.invited_by)
      .forShare()
      .executeTakeFirst();
    const inv = await trx
      .updateTable("member_invitations")
      .set({ accepted_at: now })
      .where("token_hash", "=", tokenHash)
      .where("accepted_at", "is", null)
      .where("revoked_at", "is", null)
      .where("expires_at", ">", now)
      .returningAll()
      .executeTakeFirst();
    if (!inv) throw invalid();
    if (
      !inviter ||
      inviter.removed_at !== null ||
      inviter.merchant_id !== inv.merchant_id ||
      inviter.member_role === null ||
      !mayManage(inviter.member_role, inv.member_role)
    ) {
      // Changed behind the member operations' back (they revoke it themselves): revoke it now.
      await trx
        .updateTable("member_invitations")
        .set({ accepted_at: null, revoked_at: now })
        .where("id", "=", inv.id)
        .execute();
      return null;
    }
    if (await findUserByEmail(trx, inv.email))
      throw AppError.validation([{ field: "token", message: "its e-mail already has a stablegate login" }]);
    const merchant = await findMerchantById(trx, inv.merchant_id);
    if (merchant?.status !== "active") throw AppError.forbidden("This merchant account is suspended.");
    try {
      await insertUser(trx, {
        id: userId,
        merchantId: inv.merchant_id,
        email: inv.email,
        passwordHash,
        role: "merchant",
        memberRole: inv.member_role,
        now,
      });
    } catch (err) {
      // Another login took the address between the check and the insert (the unique index decides).
      if ((err as { code?: string }).code === "23505")
        throw AppError.validation([{ field: "token", message: "its e-mail already has a stablegate login" }]);
      throw err;
    }
    await trx
      .updateTable("member_invitations")
      .set({ accepted_by: userId })
      .where("id", "=", inv.id)
      .execute();
    await audit?.record(trx, {
      targetId: inv.id,
      details: { role: inv.member_role },
      actor: {
        type: "user",
        id: userId,
        email: inv.email,
        role: inv.member_role,
        merchantId: inv.merchant_id,
      },
    });
    return inv;
  });
  if (!accepted) throw invalid();
  const user = await findUserById(kit.db, userId);
  if (!user) throw new Error("accepted member vanished");
  return {
    ...(await signIn(kit, user, tokenDelivery)),
    merchantId: accepted.merchant_id,
    invitationId: accepted.id,
  };
}
