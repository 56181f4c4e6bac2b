import type { Db } from "../db/database.js";
import type { OtpPurpose } from "../db/tables/dashboard.js";
import { AppError } from "../domain/errors.js";
import type { AuthKit } from "./kit.js";
import type { OtpHolder } from "./otp.js";
import { findUserById } from "./users.js";

/**
 * E-mailed one-time codes (docs/decisions/dashboard.md#dashboard-channel): sent, consumed at once, or checked now and spent later.
 * A code works only in the dashboard session that requested it (`OtpHolder`, issue #34).
 */

export async function requestOtp(
  kit: AuthKit,
  holder: { userId: string; sessionId: string },
  purpose: OtpPurpose,
): Promise<{ expiresAt: Date }> {
  const user = await findUserById(kit.db, holder.userId);
  if (!user) throw AppError.invalidAuth();
  const { code, expiresAt } = await kit.otp.issue(
    { userId: user.id, sessionId: holder.sessionId },
    purpose,
    kit.now(),
  );
  const minutes = Math.round(kit.config.otpTtlSeconds / 60);
  const action = {
    payout: "confirm a payout",
    password_change: "change your password",
    sensitive: "confirm a sensitive change (API keys, settings, webhooks, team or two-factor authentication)",
  }[purpose];
  await kit.mailer.send({
    to: user.email,
    subject: `Your stablegate code: ${code}`,
    text: [
      `Your one-time code to ${action} is: ${code}`,
      "",
      `It is valid for ${minutes} minutes, can be used once, and only in the browser or app that asked for it. Never share it.`,
      "If you did not ask for it, change your password.",
    ].join("\n"),
  });
  return { expiresAt };
}

/** Whose code, from a user id and the session of the request (none: no code matches). */
function holderOf(userId: string, sessionId: string | null | undefined): OtpHolder {
  return { userId, sessionId: sessionId ?? null };
}

/**
 * Checks and consumes an OTP of a purpose requested by `sessionId`; throws 400 on `field` when it
 * does not match.
 */
export async function consumeOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
  code: string,
  field = "otp",
  sessionId: string | null = null,
): Promise<void> {
  if (!(await kit.otp.verify(holderOf(userId, sessionId), purpose, code, kit.now()))) {
    throw invalidOtp(field);
  }
}

function invalidOtp(field: string): AppError {
  return AppError.validation([{ field, message: "is invalid, expired or already used; request a new code" }]);
}

/**
 * Checks an e-mailed code for an action that runs later in its own transaction (a payout): the
 * code's id, to be spent there with `spendCheckedOtp`. A wrong code costs a try and is refused
 * here; a right one stays usable until the action commits. Without the requesting session
 * (`sessionId`), no code matches.
 */
export async function checkOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
  code: string,
  field = "otp",
  sessionId: string | null = null,
): Promise<string> {
  const id = await kit.otp.check(holderOf(userId, sessionId), purpose, code, kit.now());
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
