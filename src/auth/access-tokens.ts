import { errors, jwtVerify, SignJWT } from "jose";
import type { DashboardRole } from "../db/tables/dashboard.js";
import type { Clock } from "../lib/clock.js";

/** Short-lived dashboard access tokens: HS256 JWTs signed with JWT_SECRET (`jose`). */
export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
const ISSUER = "stablegate";
const AUDIENCE = "stablegate-dashboard";

export interface AccessClaims {
  userId: string;
  sessionId: string;
  role: DashboardRole;
  merchantId: string | null;
}

export class AccessTokens {
  readonly #key: Uint8Array;

  constructor(
    secret: string,
    private readonly clock: Clock,
    readonly ttlSeconds = ACCESS_TOKEN_TTL_SECONDS,
  ) {
    this.#key = new TextEncoder().encode(secret);
  }

  async sign(claims: AccessClaims): Promise<string> {
    const now = Math.floor(this.clock.now() / 1000);
    return new SignJWT({ sid: claims.sessionId, role: claims.role, mid: claims.merchantId })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSeconds)
      .sign(this.#key);
  }

  /** The claims of a valid, unexpired token of ours; null for anything else. */
  async verify(token: string): Promise<AccessClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        algorithms: ["HS256"],
        issuer: ISSUER,
        audience: AUDIENCE,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ["sub", "exp", "iat"],
      });
      const { sub, sid, role, mid } = payload as Record<string, unknown>;
      if (typeof sub !== "string" || typeof sid !== "string") return null;
      if (role !== "merchant" && role !== "admin") return null;
      if (mid !== null && typeof mid !== "string") return null;
      return { userId: sub, sessionId: sid, role, merchantId: mid };
    } catch (err) {
      if (err instanceof errors.JOSEError) return null;
      throw err;
    }
  }
}
