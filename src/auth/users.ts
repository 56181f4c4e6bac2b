import type { Db } from "../db/database.js";
import type { DashboardRole, DashboardUser } from "../db/tables/dashboard.js";
import type { MemberRole } from "../domain/permissions.js";

/** SQL of `dashboard_users`. */

/** The login in use with this e-mail (a removed member's row is not one). */
export function findUserByEmail(db: Db, email: string): Promise<DashboardUser | undefined> {
  return db
    .selectFrom("dashboard_users")
    .selectAll()
    .where((eb) => eb(eb.fn("lower", ["email"]), "=", email.trim().toLowerCase()))
    .where("removed_at", "is", null)
    .executeTakeFirst();
}

export function findUserById(db: Db, id: string): Promise<DashboardUser | undefined> {
  return db.selectFrom("dashboard_users").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function insertUser(
  db: Db,
  u: {
    id: string;
    merchantId: string | null;
    email: string;
    passwordHash: string;
    role: DashboardRole;
    /** The member's role in its merchant; null for a platform admin. */
    memberRole: MemberRole | null;
    now: Date;
  },
): Promise<void> {
  await db
    .insertInto("dashboard_users")
    .values({
      id: u.id,
      merchant_id: u.merchantId,
      email: u.email,
      password_hash: u.passwordHash,
      role: u.role,
      member_role: u.memberRole,
      removed_at: null,
      totp_secret: null,
      totp_last_step: null,
      password_changed_at: u.now,
      created_at: u.now,
      updated_at: u.now,
    })
    .execute();
}

/**
 * The one writer of a password (change and reset alike): the new hash, and every outstanding
 * reset token of the account burnt — a link mailed before the password changed must not undo the
 * change. Run it in the transaction that also ends the sessions.
 */
export async function setPassword(db: Db, userId: string, passwordHash: string, now: Date): Promise<void> {
  await db
    .updateTable("dashboard_users")
    .set({ password_hash: passwordHash, password_changed_at: now, updated_at: now })
    .where("id", "=", userId)
    .execute();
  await db
    .updateTable("dashboard_password_resets")
    .set({ used_at: now })
    .where("user_id", "=", userId)
    .where("used_at", "is", null)
    .execute();
}
