import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import { AppError } from "../domain/errors.js";
import type { ListParams } from "../domain/list.js";
import { type AssignableRole, type MemberRole, mayManage } from "../domain/permissions.js";
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

/** Gives a member another role (never owner: ownership moves by transfer). Takes effect on its next request. */
export async function changeMemberRole(
  kit: AuthKit,
  actor: MemberActor,
  memberId: string,
  role: AssignableRole,
): Promise<{ member: MemberView; before: MemberRole }> {
  return kit.db.transaction().execute(async (trx) => {
    const target = await lockMember(trx, actor.merchantId, memberId);
    assertMayManage(actor, target.member_role, "given another role");
    await trx
      .updateTable("dashboard_users")
      .set({ member_role: role, updated_at: kit.now() })
      .where("id", "=", memberId)
      .execute();
    return { member: present({ ...target, member_role: role }), before: target.member_role };
  });
}

/**
 * Removes a member: it can no longer sign in, and every session it has ends now (its next request
 * is refused). The row stays for the audit log and the approvals that name it.
 */
export async function removeMember(kit: AuthKit, actor: MemberActor, memberId: string): Promise<MemberView> {
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
    return {
      newOwner: present({ ...target, member_role: "owner" }),
      formerOwner: present({ ...me, member_role: "admin" }),
    };
  });
}
