import { createHash, timingSafeEqual } from "node:crypto";

/** Constant-time comparison of two strings of any length (compares their SHA-256 digests). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}
