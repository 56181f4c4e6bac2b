import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../db/database.js";

/** Password tokens (`prt_…`): what a reset mail and `merchant create`'s sign-in link carry. */

export function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/**
 * A single-use token that sets the password of `userId` (`resetPassword` spends it), valid `ttlMs`.
 * Only its hash is stored.
 */
export async function issuePasswordToken(db: Db, userId: string, now: Date, ttlMs: number): Promise<string> {
  const token = `prt_${randomBytes(32).toString("base64url")}`;
  await db
    .insertInto("dashboard_password_resets")
    .values({
      token_hash: sha256(token),
      user_id: userId,
      expires_at: new Date(now.getTime() + ttlMs),
      used_at: null,
      created_at: now,
    })
    .execute();
  return token;
}
