import type { Db } from "../db/database.js";
import type { DashboardRole, DashboardUser } from "../db/tables/dashboard.js";
import { lockDurationMs } from "./lockout.js";

/** SQL of `dashboard_users`. */

export function findUserByEmail(db: Db, email: string): Promise<DashboardUser | undefined> {
  return db
    .selectFrom("dashboard_users")
    .selectAll()
    .where((eb) => eb(eb.fn("lower", ["email"]), "=", email.trim().toLowerCase()))
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
      totp_secret: null,
      totp_last_step: null,
      locked_until: null,
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

/** Counts a failed sign-in atomically and locks the account progressively. */
export async function recordLoginFailure(db: Db, userId: string, now: Date): Promise<void> {
  const row = await db
    .updateTable("dashboard_users")
    .set((eb) => ({ failed_logins: eb("failed_logins", "+", 1), updated_at: now }))
    .where("id", "=", userId)
    .returning("failed_logins")
    .executeTakeFirst();
  const lockMs = row ? lockDurationMs(row.failed_logins) : 0;
  if (lockMs > 0) {
    await db
      .updateTable("dashboard_users")
      .set({ locked_until: new Date(now.getTime() + lockMs) })
      .where("id", "=", userId)
      .execute();
  }
}

export async function resetLoginFailures(db: Db, userId: string): Promise<void> {
  await db
    .updateTable("dashboard_users")
    .set({ failed_logins: 0, locked_until: null })
    .where("id", "=", userId)
    .where((eb) => eb.or([eb("failed_logins", "<>", 0), eb("locked_until", "is not", null)]))
    .execute();
}
