import type { OtpPurpose } from "../db/tables/dashboard.js";
import { AppError, type FieldError } from "../domain/errors.js";
import type { AuthKit } from "./kit.js";
import { acceptTotp } from "./totp.js";
import { findUserById } from "./users.js";

/**
 * Step-up for sensitive dashboard writes (docs/merchants/authentication.md#step-up-for-production-changes): a dashboard session alone must not move
 * money or weaken a control in production. The write carries a fresh e-mailed code (`otp`, purpose
 * `sensitive`, or `payout` for payouts) and, when the user has 2FA on, the current TOTP code
 * (`totp`). Routes declare it (`config.stepUp`, `http/plugins/step-up.ts`); this is the check.
 *
 * The e-mailed code must have been requested by the same dashboard session (issue #34): a code
 * mailed for one session is refused in another session of the same login.
 *
 * Order and costs: both fields must be present before anything is tried (a missing `totp` costs
 * nothing); a wrong `otp` spends one of the code's 5 tries; a wrong `totp` spends the e-mailed code
 * too, so every TOTP guess costs a new e-mailed code (those requests are rate-limited).
 */

export interface StepUpCodes {
  otp?: string | undefined;
  totp?: string | undefined;
}

const INVALID = "is invalid, expired or already used; request a new code";

function refused(field: "otp" | "totp", message: string): AppError {
  return AppError.validation([{ field, message }]);
}

/** Who steps up: the user, and the dashboard session the request came from. */
export interface StepUpHolder {
  userId: string;
  sessionId: string;
}

/**
 * Checks the codes of a user's session for a write of `purpose`: the id of the matching e-mailed code,
 * checked but not yet consumed (the caller consumes it, with `kit.otp.consume`, before or inside
 * the write). Throws 400 `VALIDATION_ERROR` on `otp` or `totp` otherwise.
 */
export async function checkStepUp(
  kit: AuthKit,
  holder: StepUpHolder,
  codes: StepUpCodes,
  purpose: OtpPurpose,
): Promise<string> {
  const user = await findUserById(kit.db, holder.userId);
  if (!user) throw AppError.invalidAuth();
  const missing: FieldError[] = [];
  if (!codes.otp)
    missing.push({
      field: "otp",
      message: `is required: request a code with POST /api/v1/auth/otp {"purpose":"${purpose}"}`,
    });
  if (user.totp_enabled && !codes.totp)
    missing.push({ field: "totp", message: "is required: the current code of your authenticator app" });
  if (missing.length > 0 || !codes.otp) throw AppError.validation(missing);

  const now = kit.now();
  const otpId = await kit.otp.check(
    { userId: user.id, sessionId: holder.sessionId },
    purpose,
    codes.otp,
    now,
  );
  if (otpId === null) throw refused("otp", INVALID);
  if (user.totp_enabled && (await acceptTotp(kit, user, codes.totp ?? "")) === null) {
    await kit.otp.consume(kit.db, otpId, now);
    throw refused(
      "totp",
      "is not the current, unused code of your authenticator app; request a new e-mailed code",
    );
  }
  return otpId;
}

/** Consumes a code checked by `checkStepUp` (outside a write's transaction); 400 on `otp` if it is gone. */
export async function consumeStepUp(kit: AuthKit, otpId: string): Promise<void> {
  if (!(await kit.otp.consume(kit.db, otpId, kit.now()))) throw refused("otp", INVALID);
}
