import type { VerifyResult } from "otplib";
import { generateSecret, generateURI, verify } from "otplib";
import QRCode from "qrcode";
import type { Db } from "../db/database.js";
import type { DashboardUser } from "../db/tables/dashboard.js";
import type { AuthKit } from "./kit.js";

/** Optional TOTP second factor (RFC 6238, 30-second steps, 6 digits) with `otplib`. */
const ISSUER = "stablegate";

export function newTotpSecret(): string {
  return generateSecret();
}

export function totpUri(secret: string, email: string): string {
  return generateURI({ issuer: ISSUER, label: email, secret });
}

export function totpQrDataUrl(uri: string): Promise<string> {
  return QRCode.toDataURL(uri, { errorCorrectionLevel: "M", margin: 1, width: 240 });
}

/**
 * The time step a code matches (one step of clock drift either way), or null. A step at or before
 * `afterStep` — the last one accepted — is refused, so a code is never accepted twice.
 */
export async function checkTotp(
  secret: string,
  token: string,
  nowMs: number,
  afterStep: bigint | null,
): Promise<number | null> {
  if (!/^\d{6}$/.test(token)) return null;
  try {
    const result = await verify({
      secret,
      token,
      epoch: Math.floor(nowMs / 1000),
      epochTolerance: 30,
      ...(afterStep !== null ? { afterTimeStep: Number(afterStep) } : {}),
    });
    // TOTP strategy: the result carries the matched time step.
    return result.valid ? (result as Extract<VerifyResult, { timeStep: number }>).timeStep : null;
  } catch {
    return null;
  }
}

/**
 * Checks a user's TOTP code and records its time step (so it is not accepted again): the step, or
 * null when invalid. Sign-in, 2FA enrolment and the step-up of sensitive writes use it.
 */
export async function acceptTotp(
  kit: AuthKit,
  user: DashboardUser,
  code: string,
  db: Db = kit.db,
): Promise<number | null> {
  if (!user.totp_secret) return null;
  const secret = kit.box.open(user.totp_secret, `totp:${user.id}`);
  const step = await checkTotp(secret, code, kit.clock.now(), user.totp_last_step);
  if (step === null) return null;
  // Conditional: of two concurrent uses of one code only one records the step.
  const res = await db
    .updateTable("dashboard_users")
    .set({ totp_last_step: BigInt(step) })
    .where("id", "=", user.id)
    .where((eb) => eb.or([eb("totp_last_step", "is", null), eb("totp_last_step", "<", BigInt(step))]))
    .executeTakeFirst();
  return res.numUpdatedRows === 1n ? step : null;
}
