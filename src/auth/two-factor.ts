import type { AuditRecorder } from "../audit/index.js";
import { inTransaction } from "../db/transaction.js";
import { AppError } from "../domain/errors.js";
import type { AuthKit } from "./kit.js";
import { acceptTotp, newTotpSecret, totpQrDataUrl, totpUri } from "./totp.js";
import { findUserById } from "./users.js";

/** TOTP enrolment of a dashboard user (docs/decisions/dashboard.md#dashboard-channel): set up a seed, enable with a code, disable. */

export async function setupTotp(
  kit: AuthKit,
  userId: string,
): Promise<{ secret: string; otpauthUri: string; qrCode: string }> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  if (user.totp_enabled) throw new AppError("INVALID_STATE", "Two-factor authentication is already enabled.");
  const secret = newTotpSecret();
  await kit.db
    .updateTable("dashboard_users")
    .set({
      totp_secret: kit.box.seal(secret, `totp:${user.id}`),
      totp_last_step: null,
      updated_at: kit.now(),
    })
    .where("id", "=", user.id)
    .where("totp_enabled", "=", false)
    .execute();
  const otpauthUri = totpUri(secret, user.email);
  return { secret, otpauthUri, qrCode: await totpQrDataUrl(otpauthUri) };
}

export async function enableTotp(
  kit: AuthKit,
  userId: string,
  code: string,
  audit?: AuditRecorder,
): Promise<void> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  if (user.totp_enabled) throw new AppError("INVALID_STATE", "Two-factor authentication is already enabled.");
  if (!user.totp_secret) throw new AppError("INVALID_STATE", "Call /api/v1/auth/2fa/setup first.");
  if ((await acceptTotp(kit, user, code)) === null) throw invalidCode();
  await inTransaction(kit.db, async (trx) => {
    await trx
      .updateTable("dashboard_users")
      .set({ totp_enabled: true, updated_at: kit.now() })
      .where("id", "=", user.id)
      .execute();
    await audit?.record(trx);
  });
}

/**
 * Turns TOTP off. The route's step-up (docs/merchants/authentication.md#step-up-for-production-changes: an e-mailed `sensitive` code and the current
 * TOTP code, `auth/step-up.ts`) has authorised it before this runs.
 */
export async function disableTotp(kit: AuthKit, userId: string, audit?: AuditRecorder): Promise<void> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  if (!user.totp_enabled) throw new AppError("INVALID_STATE", "Two-factor authentication is not enabled.");
  await inTransaction(kit.db, async (trx) => {
    await trx
      .updateTable("dashboard_users")
      .set({ totp_enabled: false, totp_secret: null, totp_last_step: null, updated_at: kit.now() })
      .where("id", "=", user.id)
      .execute();
    await audit?.record(trx);
  });
}

function invalidCode(): AppError {
  return AppError.validation([{ field: "code", message: "is not a valid, unused authenticator code" }]);
}
