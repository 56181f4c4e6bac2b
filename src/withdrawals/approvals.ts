import type { Db } from "../db/database.js";
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
 * One approval per person (CONTRACT §4.2): a member's session and every key pair acting for that
 * member are the same approver (`user:<id>`). Only a pair acting for no member (the operator's, for
 * a merchant without members) counts as the API-key channel as a whole.
 */
function approverKey(a: Approver): string {
  if (a.type === "user") return `user:${a.id}`;
  return a.member ? `user:${a.member.userId}` : "api_key";
}
