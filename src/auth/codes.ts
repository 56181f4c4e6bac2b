import type { Db } from "../db/database.js";
import type { OtpPurpose } from "../db/tables/dashboard.js";
import { AppError } from "../domain/errors.js";
import type { AuthKit } from "./kit.js";
import { findUserById } from "./users.js";

/** E-mailed one-time codes (CONTRACT §6): sent, consumed at once, or checked now and spent later. */

export async function requestOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
): Promise<{ expiresAt: Date }> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  const { code, expiresAt } = await kit.otp.issue(user.id, purpose, kit.now());
  const minutes = Math.round(kit.config.otpTtlSeconds / 60);
  const action = {
    payout: "confirm a payout",
    password_change: "change your password",
    sensitive: "confirm a sensitive change (API keys, settings, webhooks or two-factor authentication)",
  }[purpose];
  await kit.mailer.send({
    to: user.email,
    subject: `Your stablegate code: ${code}`,
    text: [
      `Your one-time code to ${action} is: ${code}`,
      "",
      `It is valid for ${minutes} minutes and can be used once. Never share it.`,
      "If you did not ask for it, change your password.",
    ].join("\n"),
  });
  return { expiresAt };
}

/** Checks and consumes an OTP of a purpose; throws 400 on `field` when it does not match. */
export async function consumeOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
  code: string,
  field = "otp",
): Promise<void> {
  if (!(await kit.otp.verify(userId, purpose, code, kit.now()))) {
    throw invalidOtp(field);
  }
}

function invalidOtp(field: string): AppError {
  return AppError.validation([{ field, message: "is invalid, expired or already used; request a new code" }]);
}

/**
 * Checks an e-mailed code for an action that runs later in its own transaction (a payout): the
 * code's id, to be spent there with `spendCheckedOtp`. A wrong code costs a try and is refused
 * here; a right one stays usable until the action commits.
 */
export async function checkOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
  code: string,
  field = "otp",
): Promise<string> {
  const id = await kit.otp.check(userId, purpose, code, kit.now());
  if (id === null) {
    throw invalidOtp(field);
  }
  return id;
}

/**
 * Spends a code checked by `checkOtp` in the action's transaction: if the action fails, the
 * rollback leaves the code usable; of two actions racing with one code, one runs.
 */
export async function spendCheckedOtp(kit: AuthKit, trx: Db, id: string, field = "otp"): Promise<void> {
  if (!(await kit.otp.consume(trx, id, kit.now()))) {
    throw invalidOtp(field);
  }
}
