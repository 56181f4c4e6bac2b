import { createHash, randomBytes } from "node:crypto";
import type { AuditRecorder } from "../audit/index.js";
import type { Db } from "../db/database.js";
import type { SessionRevokedReason, TokenDelivery } from "../db/tables/dashboard.js";
import { newId } from "../domain/ids.js";
import type { MemberRole } from "../domain/permissions.js";
import { merchantStatuses } from "../merchants/index.js";

/**
 * Sessions are refresh-token families (OAuth 2.0 Security BCP §4.14): each refresh hands out a new
 * token and retires the one presented; presenting a retired token again means it was copied, so
 * the whole family is revoked — the thief's and the victim's tokens alike.
 */
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
const PREFIX = "rt_";

function tokenHash(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

function newToken(): string {
  return PREFIX + randomBytes(32).toString("base64url");
}

export interface NewSession {
  sessionId: string;
  refreshToken: string;
  expiresAt: Date;
}

/**
 * A new sign-in. `tokenDelivery` is fixed for the session's life: only a 'bearer' session (a
 * client that asked at sign-in) is ever handed an access token in a response body.
 */
export async function createSession(
  db: Db,
  userId: string,
  now: Date,
  tokenDelivery: TokenDelivery = "cookie",
  audit?: AuditRecorder,
): Promise<NewSession> {
  const sessionId = newId("ses");
  const refreshToken = newToken();
  const expiresAt = new Date(now.getTime() + REFRESH_TOKEN_TTL_SECONDS * 1000);
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("dashboard_sessions")
      .values({
        id: sessionId,
        user_id: userId,
        created_at: now,
        last_used_at: now,
        expires_at: expiresAt,
        token_delivery: tokenDelivery,
      })
      .execute();
    await trx
      .insertInto("dashboard_refresh_tokens")
      .values({ token_hash: tokenHash(refreshToken), session_id: sessionId, created_at: now, used_at: null })
      .execute();
    await audit?.record(trx);
  });
  return { sessionId, refreshToken, expiresAt };
}

export type RotateResult =
  | {
      kind: "rotated";
      sessionId: string;
      userId: string;
      refreshToken: string;
      expiresAt: Date;
      tokenDelivery: TokenDelivery;
    }
  | { kind: "reuse"; sessionId: string }
  | { kind: "invalid" };

/** Exchanges a refresh token for a new one of the same family; detects reuse. */
export async function rotateRefreshToken(db: Db, token: string, now: Date): Promise<RotateResult> {
  if (!token.startsWith(PREFIX) || token.length > 100) return { kind: "invalid" };
  return db.transaction().execute(async (trx): Promise<RotateResult> => {
    // Row lock on the token: of two concurrent refreshes with one token, the second sees it used.
    const row = await trx
      .selectFrom("dashboard_refresh_tokens as t")
      .innerJoin("dashboard_sessions as s", "s.id", "t.session_id")
      .select(["t.session_id", "t.used_at", "s.user_id", "s.revoked_at", "s.expires_at", "s.token_delivery"])
      .where("t.token_hash", "=", tokenHash(token))
      .forUpdate("t")
      .executeTakeFirst();
    if (!row) return { kind: "invalid" };
    if (row.used_at !== null) {
      await revokeSessionIn(trx, row.session_id, "reuse", now);
      return { kind: "reuse", sessionId: row.session_id };
    }
    if (row.revoked_at !== null || new Date(row.expires_at).getTime() <= now.getTime())
      return { kind: "invalid" };
    const refreshToken = newToken();
    await trx
      .updateTable("dashboard_refresh_tokens")
      .set({ used_at: now })
      .where("token_hash", "=", tokenHash(token))
      .execute();
    await trx
      .insertInto("dashboard_refresh_tokens")
      .values({
        token_hash: tokenHash(refreshToken),
        session_id: row.session_id,
        created_at: now,
        used_at: null,
      })
      .execute();
    await trx
      .updateTable("dashboard_sessions")
      .set({ last_used_at: now })
      .where("id", "=", row.session_id)
      .execute();
    return {
      kind: "rotated",
      sessionId: row.session_id,
      userId: row.user_id,
      refreshToken,
      expiresAt: new Date(row.expires_at),
      tokenDelivery: row.token_delivery,
    };
  });
}

/** The session a refresh token belongs to (used or not), for logout. */
export async function sessionOfRefreshToken(db: Db, token: string): Promise<string | undefined> {
  const row = await db
    .selectFrom("dashboard_refresh_tokens")
    .select("session_id")
    .where("token_hash", "=", tokenHash(token))
    .executeTakeFirst();
  return row?.session_id;
}

async function revokeSessionIn(db: Db, sessionId: string, reason: SessionRevokedReason, now: Date) {
  await db
    .updateTable("dashboard_sessions")
    .set({ revoked_at: now, revoked_reason: reason })
    .where("id", "=", sessionId)
    .where("revoked_at", "is", null)
    .execute();
}

export function revokeSession(db: Db, sessionId: string, reason: SessionRevokedReason, now: Date) {
  return revokeSessionIn(db, sessionId, reason, now);
}

/** Ends every session of a user, optionally but one (the session that changed the password). */
export async function revokeUserSessions(
  db: Db,
  userId: string,
  reason: SessionRevokedReason,
  now: Date,
  except?: string,
): Promise<void> {
  let q = db
    .updateTable("dashboard_sessions")
    .set({ revoked_at: now, revoked_reason: reason })
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null);
  if (except) q = q.where("id", "<>", except);
  await q.execute();
}

export interface ActiveSession {
  sessionId: string;
  userId: string;
  email: string;
  role: "merchant" | "admin";
  /** The member's role now (read on every request: a role change applies to the next one). */
  memberRole: MemberRole | null;
  merchantId: string | null;
  merchantStatus: "active" | "suspended" | null;
}

/** The live session behind an access token: not revoked, not expired. One indexed query. */
export async function findActiveSession(
  db: Db,
  sessionId: string,
  now: Date,
): Promise<ActiveSession | undefined> {
  const row = await db
    .selectFrom("dashboard_sessions as s")
    .innerJoin("dashboard_users as u", "u.id", "s.user_id")
    .leftJoin(merchantStatuses(db).as("m"), "m.id", "u.merchant_id")
    .select([
      "s.id",
      "s.expires_at",
      "s.revoked_at",
      "u.id as user_id",
      "u.email",
      "u.role",
      "u.member_role",
      "u.removed_at",
      "u.merchant_id",
      "m.status",
    ])
    .where("s.id", "=", sessionId)
    .executeTakeFirst();
  if (!row || row.revoked_at !== null || new Date(row.expires_at).getTime() <= now.getTime())
    return undefined;
  // A removed member's sessions were revoked with it; this holds even for one that raced the removal.
  if (row.removed_at !== null) return undefined;
  return {
    sessionId: row.id,
    userId: row.user_id,
    email: row.email,
    role: row.role,
    memberRole: row.member_role,
    merchantId: row.merchant_id,
    merchantStatus: row.status,
  };
}
