import type { TokenDelivery } from "../db/tables/dashboard.js";
import { AppError } from "../domain/errors.js";
import type { AuthKit } from "./kit.js";
import { revokeSession, rotateRefreshToken, sessionOfRefreshToken } from "./sessions.js";
import { findUserById } from "./users.js";

/** A signed-in session's life after sign-in: a new access token on refresh, and sign-out. */

export async function issueAccessToken(kit: AuthKit, userId: string, sessionId: string): Promise<string> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth("Missing or invalid dashboard session.");
  return kit.tokens.sign({ userId, sessionId, role: user.role, merchantId: user.merchant_id });
}

export type RefreshResult =
  | { kind: "rotated"; accessToken: string; refreshToken: string; tokenDelivery: TokenDelivery }
  | { kind: "reuse"; sessionId: string }
  | { kind: "invalid" };

/**
 * Exchanges a refresh token for a new one and a new access token. Presenting an already rotated
 * token ends the whole session (`reuse`: the caller logs it); an unknown or expired one is `invalid`.
 */
export async function refreshSession(kit: AuthKit, refreshToken: string): Promise<RefreshResult> {
  const r = await rotateRefreshToken(kit.db, refreshToken, kit.now());
  if (r.kind !== "rotated") return r;
  const accessToken = await issueAccessToken(kit, r.userId, r.sessionId);
  return { kind: "rotated", accessToken, refreshToken: r.refreshToken, tokenDelivery: r.tokenDelivery };
}

/** Ends the session of the refresh token and the one of the access token (either may be absent or invalid). */
export async function logout(
  kit: AuthKit,
  tokens: { refreshToken: string | undefined; accessToken: string | undefined },
): Promise<void> {
  const now = kit.now();
  const fromRefresh = tokens.refreshToken
    ? await sessionOfRefreshToken(kit.db, tokens.refreshToken)
    : undefined;
  if (fromRefresh) await revokeSession(kit.db, fromRefresh, "logout", now);
  const claims = tokens.accessToken ? await kit.tokens.verify(tokens.accessToken) : null;
  if (claims) await revokeSession(kit.db, claims.sessionId, "logout", now);
}
