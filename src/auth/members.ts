import type { AuditRecorder } from "../audit/index.js";
import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import { AppError } from "../domain/errors.js";
import type { ListParams } from "../domain/list.js";
import {
  ASSIGNABLE_ROLES,
  type AssignableRole,
  type MemberRole,
  mayManage,
  mayReassignKey,
} from "../domain/permissions.js";
import { type KeyPair, lockOwnApiKey, setApiKeyHolder } from "../merchants/index.js";
import type { AuthKit } from "./kit.js";
import { revokeUserSessions } from "./sessions.js";

/**
 * The members of a merchant (issue #21): list, change a role, remove, transfer ownership.
 * Invitations are in `invitations.ts`. Who may change whom is `mayManage` (domain/permissions.ts);
 * which permission a route needs is the route's own config.
 */

/** The signed-in member acting. */
export interface MemberActor {
  userId: string;
  merchantId: string;
  role: MemberRole;
}

export interface MemberView {
  id: string;
  email: string;
  role: MemberRole;
  twoFactorEnabled: boolean;
  createdAt: string;
}

function present(r: {
  id: string;
  email: string;
  member_role: MemberRole | null;
  totp_enabled: boolean;
  created_at: Date;
}): MemberView {
  return {
    id: r.id,
    email: r.email,
    role: r.member_role ?? "viewer",
    twoFactorEnabled: r.totp_enabled,
    createdAt: new Date(r.created_at).toISOString(),
  };
}

const COLUMNS = ["id", "email", "member_role", "totp_enabled", "created_at"] as const;

/** A page of the merchant's members (removed ones excluded), oldest first: the owner usually leads. */
export function listMembers(
  db: Db,
  merchantId: string,
  page: ListParams,
): Promise<{ rows: MemberView[]; total: number }> {
  const q = db
    .selectFrom("dashboard_users")
    .where("merchant_id", "=", merchantId)
    .where("removed_at", "is", null);
  return paginate(q, page, (x) => x.select(COLUMNS).orderBy("created_at", "asc").orderBy("id", "asc")).then(
    ({ rows, total }) => ({ rows: rows.map(present), total }),
  );
}

/** A member of the actor's merchant, locked for the change; 404 for anyone else (or removed). */
async function lockMember(trx: Db, merchantId: string, memberId: string) {
  const row = await trx
    .selectFrom("dashboard_users")
    .select([...COLUMNS, "merchant_id"])
    .where("id", "=", memberId)
    .where("merchant_id", "=", merchantId)
    .where("removed_at", "is", null)
    .forUpdate()
    .executeTakeFirst();
  if (!row || row.member_role === null) throw AppError.notFound("No member with this id.");
  return { ...row, member_role: row.member_role };
}

function assertMayManage(actor: MemberActor, target: MemberRole, what: string) {
  if (!mayManage(actor.role, target))
    throw AppError.forbidden(
      target === "owner"
        ? `The owner cannot be ${what}; the owner transfers ownership first.`
        : `A ${actor.role} cannot change a ${target}.`,
    );
}

/**
 * Gives a member another role (never owner: ownership moves by transfer). Takes effect on its next
 * request, and on its key pairs' next requests; the pending invitations it sent that the new role
 * may not grant are revoked in the same transaction.
 */
export async function changeMemberRole(
  kit: AuthKit,
  actor: MemberActor,
  memberId: string,
  role: AssignableRole,
  audit?: AuditRecorder,
): Promise<{ member: MemberView; before: MemberRole }> {
  return kit.db.transaction().execute(async (trx) => {
    const target = await lockMember(trx, actor.merchantId, memberId);
    assertMayManage(actor, target.member_role, "given another role");
    const now = kit.now();
    await trx
      .updateTable("dashboard_users")
      .set({ member_role: role, updated_at: now })
      .where("id", "=", memberId)
      .execute();
    // A demoted member's pending invitations die with the right to grant them (issue #34).
    await revokeInvitationsSentBy(trx, actor.merchantId, memberId, role, now);
    await audit?.record(trx, { details: { email: target.email, before: target.member_role, after: role } });
    return { member: present({ ...target, member_role: role }), before: target.member_role };
  });
}

/**
 * Removes a member: it can no longer sign in, every session it has ends now (its next request is
 * refused), the invitations it sent are revoked, and its key pairs stop. The row stays for the
 * audit log and the approvals that name it.
 */
export async function removeMember(
  kit: AuthKit,
  actor: MemberActor,
  memberId: string,
  audit?: AuditRecorder,
): Promise<MemberView> {
  return kit.db.transaction().execute(async (trx) => {
    const target = await lockMember(trx, actor.merchantId, memberId);
    assertMayManage(actor, target.member_role, "removed");
    const now = kit.now();
    await trx
      .updateTable("dashboard_users")
      .set({ removed_at: now, updated_at: now })
      .where("id", "=", memberId)
      .execute();
    await revokeUserSessions(trx, memberId, "member_removed", now);
    // Its pending invitations too (issue #34). Its API key pairs stop by themselves: they act for
    // a removed member (403 `key_owner_removed`) until an owner or admin reassigns them.
    await revokeInvitationsSentBy(trx, actor.merchantId, memberId, null, now);
    await audit?.record(trx, { details: { email: target.email, role: target.member_role } });
    return present(target);
  });
}

/**
 * The owner hands ownership to another member, who becomes `owner`; the former owner becomes
 * `admin`. One transaction: the merchant always has exactly one owner (a unique index says so).
 */
export async function transferOwnership(
  kit: AuthKit,
  actor: MemberActor,
  memberId: string,
  audit?: AuditRecorder,
): Promise<{ newOwner: MemberView; formerOwner: MemberView }> {
  if (actor.role !== "owner") throw AppError.forbidden("Only the owner transfers ownership.");
  if (memberId === actor.userId)
    throw AppError.validation([{ field: "memberId", message: "is already the owner" }]);
  return kit.db.transaction().execute(async (trx) => {
    const me = await lockMember(trx, actor.merchantId, actor.userId);
    if (me.member_role !== "owner") throw AppError.forbidden("Only the owner transfers ownership.");
    const target = await lockMember(trx, actor.merchantId, memberId);
    const now = kit.now();
    await trx
      .updateTable("dashboard_users")
      .set({ member_role: "admin", updated_at: now })
      .where("id", "=", me.id)
      .execute();
    await trx
      .updateTable("dashboard_users")
      .set({ member_role: "owner", updated_at: now })
      .where("id", "=", target.id)
      .execute();
    await audit?.record(trx, { details: { newOwner: target.email, formerOwner: me.email } });
    return {
      newOwner: present({ ...target, member_role: "owner" }),
      formerOwner: present({ ...me, member_role: "admin" }),
    };
  });
}

/**
 * An owner or admin takes over a key pair (issue #34, docs/permissions.md): how a pair whose member was
 * removed or lost a permission works again. A pair acts for whoever holds its secret, so the pair
 * gets a new secret (returned once, for the actor; the old one stops at once; the public key stays)
 * and acts for the actor from its next request, with the actor's role. `memberId` must be the actor
 * itself: a pair is never made to act for another member while someone else holds its secret (that
 * member mints its own pair). An admin never takes the owner's pair (`mayReassignKey`). A revoked
 * pair cannot be taken over (409).
 */
export async function reassignApiKey(
  kit: AuthKit,
  actor: MemberActor,
  keyId: string,
  memberId: string,
  audit?: AuditRecorder,
): Promise<{ pair: KeyPair; from: string | null }> {
  if (actor.role !== "owner" && actor.role !== "admin")
    throw AppError.forbidden("Only the owner or an admin takes over API key pairs.");
  if (memberId !== actor.userId)
    throw AppError.forbidden(
      "A key pair acts for whoever holds its secret, so it can only be reassigned to yourself (memberId = your " +
        "own user id): you take it over and receive a new secret, and the old one stops. The other member " +
        "should create their own pair.",
    );
  return kit.db.transaction().execute(async (trx) => {
    const key = await lockOwnApiKey(trx, actor.merchantId, keyId);
    if (key.status !== "active") throw new AppError("INVALID_STATE", "This API key pair is revoked.");
    const me = await lockMember(trx, actor.merchantId, actor.userId);
    const holder = await currentHolder(trx, actor.merchantId, key.created_by);
    if (!mayReassignKey({ id: me.id, role: me.member_role }, holder, me.id))
      throw AppError.forbidden(
        holder?.role === "owner"
          ? "Only the owner takes over the owner's key pairs."
          : `A ${me.member_role} cannot take over this pair.`,
      );
    const pair = await setApiKeyHolder(trx, key.id, me.id);
    await audit?.record(trx, {
      details: { from: key.created_by, to: pair.createdBy, environment: pair.environment, newSecret: true },
    });
    return { pair, from: key.created_by };
  });
}

/** The member a pair acts for now (null: removed); a pair without a creator is the owner's. */
async function currentHolder(
  trx: Db,
  merchantId: string,
  createdBy: string | null,
): Promise<{ id: string; role: MemberRole } | null> {
  let q = trx
    .selectFrom("dashboard_users")
    .select(["id", "member_role"])
    .where("merchant_id", "=", merchantId)
    .where("removed_at", "is", null);
  q = createdBy === null ? q.where("member_role", "=", "owner") : q.where("id", "=", createdBy);
  const row = await q.executeTakeFirst();
  return row?.member_role ? { id: row.id, role: row.member_role } : null;
}

/**
 * Revokes the pending invitations `memberId` sent that `role` (its role from now on; null: removed)
 * may not grant (issue #34, docs/permissions.md): run in the transaction that removes or demotes it. An
 * invitation is only as good as its inviter's right to grant it.
 */
export async function revokeInvitationsSentBy(
  trx: Db,
  merchantId: string,
  memberId: string,
  role: MemberRole | null,
  now: Date,
): Promise<void> {
  const stillGrantable = role === null ? [] : ASSIGNABLE_ROLES.filter((r) => mayManage(role, r));
  let q = trx
    .updateTable("member_invitations")
    .set({ revoked_at: now })
    .where("merchant_id", "=", merchantId)
    .where("invited_by", "=", memberId)
    .where("accepted_at", "is", null)
    .where("revoked_at", "is", null);
  if (stillGrantable.length > 0) q = q.where("member_role", "not in", stillGrantable);
  await q.execute();
}
