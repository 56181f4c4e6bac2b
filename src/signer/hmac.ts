import { createHmac, randomBytes } from "node:crypto";
import type { Clock } from "../lib/clock.js";
import { safeEqual } from "../lib/crypto.js";

/**
 * Authentication of internal calls (docs/decisions/security.md): `X-Stablegate-Timestamp` (ms since the epoch) and
 * `X-Stablegate-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`. Every body carries a
 * random `requestId`, so two legitimate requests never share a MAC; a MAC already seen inside the
 * skew window is a replay and refused.
 */
export const TIMESTAMP_HEADER = "x-stablegate-timestamp";
export const SIGNATURE_HEADER = "x-stablegate-signature";
/** Largest accepted distance between the request's timestamp and the server clock. */
export const MAX_SKEW_MS = 30_000;

export function internalMac(secret: string, timestamp: string, body: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

/** Headers of an authenticated request with `body` (which should contain a fresh `requestId`). */
export function authHeaders(secret: string, body: string, now: number): Record<string, string> {
  const timestamp = String(now);
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: `v1=${internalMac(secret, timestamp, body)}` };
}

export function newRequestId(): string {
  return randomBytes(16).toString("hex");
}

export type AuthFailure = "unsigned" | "stale" | "bad_signature" | "replayed";

/** Verifies internal requests and remembers the MACs it accepted for twice the skew window. */
export class InternalAuthVerifier {
  readonly #seen = new Map<string, number>();
  #prunedAt = 0;

  constructor(
    private readonly secret: string,
    private readonly clock: Clock,
  ) {}

  verify(headers: Record<string, string | string[] | undefined>, body: string): AuthFailure | null {
    const timestamp = header(headers, TIMESTAMP_HEADER);
    const signature = header(headers, SIGNATURE_HEADER);
    if (!timestamp || !signature) return "unsigned";
    if (!/^\d{1,16}$/.test(timestamp)) return "unsigned";
    const now = this.clock.now();
    if (Math.abs(now - Number(timestamp)) > MAX_SKEW_MS) return "stale";
    const expected = `v1=${internalMac(this.secret, timestamp, body)}`;
    if (!safeEqual(signature, expected)) return "bad_signature";
    this.#prune(now);
    if (this.#seen.has(expected)) return "replayed";
    this.#seen.set(expected, Number(timestamp));
    return null;
  }

  /** Forgets MACs older than twice the skew (refused as stale anyway), at most once a second. */
  #prune(now: number): void {
    if (now - this.#prunedAt < 1_000) return;
    this.#prunedAt = now;
    for (const [mac, ts] of this.#seen) if (now - ts > 2 * MAX_SKEW_MS) this.#seen.delete(mac);
  }
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
