import type { AuditRecorder } from "../audit/index.js";
import { AppError } from "../domain/errors.js";
import { assertNotThrottled } from "./accounts.js";
import { consumeOtp } from "./codes.js";
import type { AuthKit } from "./kit.js";
import { clearAccount, recordFailure, throttleKeys } from "./lockout.js";
import { issuePasswordToken, sha256 } from "./password-tokens.js";
import { hashPassword, validatePassword, verifyPassword } from "./passwords.js";
import { revokeUserSessions } from "./sessions.js";
import { findUserByEmail, findUserById, setPassword } from "./users.js";

/** Password reset by an e-mailed token, and password change of a signed-in user (docs/decisions/dashboard.md#dashboard-channel). */

export const PASSWORD_RESET_TTL_MS = 60 * 60_000;

/** Always succeeds, whether or not the e-mail has an account (no account enumeration). */
export async function forgotPassword(
  kit: AuthKit,
  email: string,
  resetUrl: (token: string) => string,
): Promise<void> {
  const user = await findUserByEmail(kit.db, email);
  if (!user) return;
  const token = await issuePasswordToken(kit.db, user.id, kit.now(), PASSWORD_RESET_TTL_MS);
  // Sent in the background: the response time must not depend on whether the account exists.
  kit.mailer
    .send({
      to: user.email,
      subject: "Reset your stablegate password",
      text: [
        "Someone (hopefully you) asked to reset the password of your stablegate account.",
        "",
        `Reset it here within 60 minutes: ${resetUrl(token)}`,
        "",
        `Or use this reset token: ${token}`,
        "",
        "If you did not ask for this, ignore this mail; your password stays unchanged.",
      ].join("\n"),
    })
    .catch((err: unknown) => kit.logger.error({ err }, "password reset mail not sent"));
}

/** Sets a new password with a mailed token; the account's sign-in throttles start again. */
/** Sets a new password with a reset token; returns whose it was (for the audit log). */
export async function resetPassword(
  kit: AuthKit,
  token: string,
  newPassword: string,
  audit?: AuditRecorder,
): Promise<{ userId: string; email: string | null; merchantId: string | null }> {
  const errors = validatePassword(newPassword, "newPassword");
  if (errors.length > 0) throw AppError.validation(errors);
  const invalid = () => AppError.validation([{ field: "token", message: "is invalid, used or expired" }]);
  if (!token.startsWith("prt_") || token.length > 100) throw invalid();
  const passwordHash = await hashPassword(newPassword);
  const now = kit.now();
  return kit.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable("dashboard_password_resets")
      .set({ used_at: now })
      .where("token_hash", "=", sha256(token))
      .where("used_at", "is", null)
      .where("expires_at", ">", now)
      .returning("user_id")
      .executeTakeFirst();
    if (!row) throw invalid();
    await setPassword(trx, row.user_id, passwordHash, now);
    // Whoever knew the old password is out: every session ends.
    await revokeUserSessions(trx, row.user_id, "password_reset", now);
    const user = await findUserById(trx, row.user_id);
    if (user) await clearAccount(trx, user.email);
    await audit?.record(trx, {
      actor: {
        type: "user",
        id: row.user_id,
        email: user?.email ?? null,
        role: null,
        merchantId: user?.merchant_id ?? null,
      },
    });
    return { userId: row.user_id, email: user?.email ?? null, merchantId: user?.merchant_id ?? null };
  });
}

/**
 * Changes the password of a signed-in user at client address `ip`. A wrong current password counts
 * in the same throttles as a failed sign-in (a stolen session must not become a password oracle).
 */
export async function changePassword(
  kit: AuthKit,
  userId: string,
  currentSessionId: string,
  input: { currentPassword: string; newPassword: string; otp: string },
  ip: string,
  audit?: AuditRecorder,
): Promise<void> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  const errors = validatePassword(input.newPassword, "newPassword");
  if (errors.length > 0) throw AppError.validation(errors);
  const now = kit.now();
  const keys = throttleKeys(user.email, ip);
  await assertNotThrottled(kit, keys, now);
  if (!(await verifyPassword(user.password_hash, input.currentPassword))) {
    await recordFailure(kit.db, keys, now);
    throw AppError.validation([{ field: "currentPassword", message: "is not the current password" }]);
  }
  await consumeOtp(kit, user.id, "password_change", input.otp, "otp", currentSessionId);
  const passwordHash = await hashPassword(input.newPassword);
  await kit.db.transaction().execute(async (trx) => {
    await setPassword(trx, user.id, passwordHash, now);
    // Every other sign-in ends; the one that changed the password (it proved the current
    // password and an e-mailed code) stays.
    await revokeUserSessions(trx, user.id, "password_change", now, currentSessionId);
    await audit?.record(trx);
  });
}
