import { sql } from "kysely";
import { currentMembers } from "../auth/index.js";
import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import { isMemberRole, roleAllows } from "../domain/permissions.js";
import type { Approver, RecordedApproval } from "../domain/withdrawal.js";

/**
 * SQL of `withdrawal_approvals` (issue #21, four-eyes): who approved a withdrawal request. The
 * primary key (transaction, approver) makes a second approval by the same person a no-op the
 * caller sees, whatever the race and whichever channel (issue #34: a key pair's approval is its
 * member's).
 */

/** Records `approver`'s approval; false when it had already approved. Run under the request's row lock. */
export async function addApproval(
  trx: Db,
  transactionId: string,
  approver: Approver,
  now: Date,
): Promise<boolean> {
  const row = await trx
    .insertInto("withdrawal_approvals")
    .values({
      transaction_id: transactionId,
      approver: approverKey(approver),
      actor_type: approver.type,
      actor_id: approver.id,
      actor_email: approver.type === "user" ? approver.email : (approver.member?.email ?? null),
      created_at: now,
    })
    .onConflict((oc) => oc.columns(["transaction_id", "approver"]).doNothing())
    .returning("approver")
    .executeTakeFirst();
  return row !== undefined;
}

/** The approvals of a withdrawal request, oldest first. */
export async function listApprovals(db: Db, transactionId: string): Promise<RecordedApproval[]> {
  const rows = await db
    .selectFrom("withdrawal_approvals")
    .select(["actor_type", "actor_id", "actor_email", "created_at"])
    .where("transaction_id", "=", transactionId)
    .orderBy("created_at", "asc")
    .orderBy("approver", "asc")
    .execute();
  return rows.map((r) => ({
    actorType: r.actor_type,
    actorId: r.actor_id,
    email: r.actor_email,
    approvedAt: new Date(r.created_at),
  }));
}

/**
 * How many of a request's approvals still stand (issue #34): those of people who are members now
 * with a role that allows `withdrawals:approve` in this environment. An approval by someone removed
 * or demoted since is kept on record but counts no more: four-eyes is the control in force when the
 * money moves. The API-key channel of a pair acting for no member (`api_key`) stands.
 */
export async function standingApprovals(
  trx: Db,
  transactionId: string,
  merchantId: string,
  environment: Environment,
): Promise<number> {
  const rows = await trx
    .selectFrom("withdrawal_approvals as w")
    .leftJoin(currentMembers(trx, merchantId).as("u"), (j) =>
      j.on(sql<boolean>`w.approver = 'user:' || u.id`),
    )
    .select(["w.approver", "u.member_role"])
    .where("w.transaction_id", "=", transactionId)
    .execute();
  return rows.filter(
    (r) =>
      r.approver === "api_key" ||
      (isMemberRole(r.member_role) && roleAllows(r.member_role, "withdrawals:approve", environment)),
  ).length;
}

/**
 * One approval per person (docs/decisions/team-accounts.md#four-eyes): a member's session and every key pair acting for that
 * member are the same approver (`user:<id>`). Only a pair acting for no member (the operator's, for
 * a merchant without members) counts as the API-key channel as a whole.
 */
function approverKey(a: Approver): string {
  if (a.type === "user") return `user:${a.id}`;
  return a.member ? `user:${a.member.userId}` : "api_key";
}
