import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The key of the `/dev/mail` page: derived from this installation's JWT secret (generated into the
 * 0600 secrets file of DATA_DIR in development), so whoever can read the data folder (the operator,
 * `stablegate mail list`, the start-up banner) has it and another user of the machine does not.
 */
export function devOutboxKey(jwtSecret: string): string {
  return createHmac("sha256", jwtSecret).update("stablegate /dev/mail").digest("base64url").slice(0, 32);
}

/** Whether `given` is the key (compared in constant time). */
export function isDevOutboxKey(jwtSecret: string, given: unknown): boolean {
  if (typeof given !== "string") return false;
  const want = Buffer.from(devOutboxKey(jwtSecret));
  const got = Buffer.from(given);
  return got.length === want.length && timingSafeEqual(got, want);
}
