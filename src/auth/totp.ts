import type { VerifyResult } from "otplib";
import { generateSecret, generateURI, verify } from "otplib";
import QRCode from "qrcode";

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
