import { createHmac, randomInt, timingSafeEqual } from "node:crypto";
import type { Db } from "../db/database.js";
import type { OtpPurpose } from "../db/tables/dashboard.js";
import { inTransaction } from "../db/transaction.js";
import { newId } from "../domain/ids.js";

/**
 * E-mailed one-time passwords (docs/decisions/dashboard.md#dashboard-channel): 6 digits, kept only as an HMAC (a keyed hash: six
 * digits under a plain hash fall to a million guesses offline), `OTP_TTL_SECONDS` long, 5 tries,
 * single use, bound to their purpose and to the dashboard session that requested them (issue #34:
 * another session of the same login — a second sign-in by whoever knows the password — cannot
 * spend a code mailed for this one). Requesting a new code retires the open ones of the purpose,
 * in every session of the user (one open code per purpose at a time). `sensitive` is the step-up
 * code of production writes (docs/merchants/authentication.md#step-up-for-production-changes, `auth/step-up.ts`).
 */
export const OTP_PURPOSES = ["payout", "password_change", "sensitive"] as const;
export const OTP_MAX_ATTEMPTS = 5;

/** Whose code: the user, and the dashboard session that requested it (the only one that may use it). */
export interface OtpHolder {
  userId: string;
  /** Null: no session, so no code matches (fails closed). */
  sessionId: string | null;
}

export class OtpService {
  constructor(
    private readonly db: Db,
    /** HMAC key (derived from SECRET_ENCRYPTION_KEY). */
    private readonly key: Buffer,
    private readonly ttlSeconds: number,
  ) {}

  #hash(id: string, code: string): Buffer {
    return createHmac("sha256", this.key).update(`${id}:${code}`).digest();
  }

  /** Creates a code and returns it (to be e-mailed); earlier open codes of the purpose stop working. */
  async issue(holder: OtpHolder, purpose: OtpPurpose, now: Date): Promise<{ code: string; expiresAt: Date }> {
    const { userId, sessionId } = holder;
    if (sessionId === null) throw new Error("an e-mailed code is requested by a dashboard session");
    const code = String(randomInt(0, 1_000_000)).padStart(6, "0");
    const id = newId("otp");
    const expiresAt = new Date(now.getTime() + this.ttlSeconds * 1000);
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable("dashboard_otps")
        .set({ consumed_at: now })
        .where("user_id", "=", userId)
        .where("purpose", "=", purpose)
        .where("consumed_at", "is", null)
        .execute();
      await trx
        .insertInto("dashboard_otps")
        .values({
          id,
          user_id: userId,
          session_id: sessionId,
          purpose,
          code_hash: this.#hash(id, code),
          expires_at: expiresAt,
          created_at: now,
          consumed_at: null,
        })
        .execute();
    });
    return { code, expiresAt };
  }

  /**
   * Checks and consumes a code. A wrong code uses up one of the 5 tries of the open code; an
   * expired, used-up, consumed or other-purpose code never matches. Runs in the caller's
   * transaction when given one, so the code is consumed together with the action it authorises.
   */
  async verify(
    holder: OtpHolder,
    purpose: OtpPurpose,
    code: string,
    now: Date,
    db: Db = this.db,
  ): Promise<boolean> {
    const run = async (trx: Db): Promise<boolean> => {
      const id = await this.#match(trx, holder, purpose, code, now);
      return id !== null && (await this.consume(trx, id, now));
    };
    return inTransaction(db, run);
  }

  /**
   * Checks a code without consuming it: the code's id when it matches, else null (a wrong code
   * uses up one of the tries, committed at once). The action it authorises then consumes it with
   * `consume` in its own transaction, so an action that fails leaves the code usable.
   */
  async check(holder: OtpHolder, purpose: OtpPurpose, code: string, now: Date): Promise<string | null> {
    return this.db.transaction().execute((trx) => this.#match(trx, holder, purpose, code, now));
  }

  /**
   * Consumes a checked code in the caller's transaction. False when it was consumed meanwhile (by
   * a concurrent action, which then holds its row until it commits or rolls back) or has expired.
   */
  async consume(db: Db, id: string, now: Date): Promise<boolean> {
    const row = await db
      .updateTable("dashboard_otps")
      .set({ consumed_at: now })
      .where("id", "=", id)
      .where("consumed_at", "is", null)
      .where("expires_at", ">", now)
      .returning("id")
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Gives back a code consumed for an action that then failed (a step-up write refused after the
   * check), so the user can correct the input and try again with the same code. Only while it has
   * not expired and no newer code of the purpose was requested (which retires it); its spent tries
   * stay spent.
   */
  async release(id: string, now: Date): Promise<void> {
    await this.db
      .updateTable("dashboard_otps")
      .set({ consumed_at: null })
      .where("id", "=", id)
      .where("consumed_at", "is not", null)
      .where("expires_at", ">", now)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("dashboard_otps as newer")
              .select("newer.id")
              .whereRef("newer.user_id", "=", "dashboard_otps.user_id")
              .whereRef("newer.purpose", "=", "dashboard_otps.purpose")
              .whereRef("newer.id", "<>", "dashboard_otps.id")
              // A code of the same instant counts as newer: which one is open would be unclear.
              .whereRef("newer.created_at", ">=", "dashboard_otps.created_at"),
          ),
        ),
      )
      .execute();
  }

  /**
   * The open code of the purpose requested by this session if `code` matches it; a mismatch spends
   * a try. Another session's code is not looked at (neither matched nor spent).
   */
  async #match(
    trx: Db,
    holder: OtpHolder,
    purpose: OtpPurpose,
    code: string,
    now: Date,
  ): Promise<string | null> {
    const { userId, sessionId } = holder;
    if (sessionId === null) return null;
    if (!/^\d{6}$/.test(code)) {
      // Malformed input still costs a try, like any wrong code.
      await this.#spendTry(trx, userId, sessionId, purpose, now);
      return null;
    }
    const row = await trx
      .selectFrom("dashboard_otps")
      .select(["id", "code_hash", "attempts", "expires_at"])
      .where("user_id", "=", userId)
      .where("session_id", "=", sessionId)
      .where("purpose", "=", purpose)
      .where("consumed_at", "is", null)
      .orderBy("created_at", "desc")
      .limit(1)
      .forUpdate()
      .executeTakeFirst();
    if (!row) return null;
    if (new Date(row.expires_at).getTime() <= now.getTime() || row.attempts >= OTP_MAX_ATTEMPTS) return null;
    const match = timingSafeEqual(Buffer.from(row.code_hash), this.#hash(row.id, code));
    if (!match) {
      await trx
        .updateTable("dashboard_otps")
        .set({ attempts: row.attempts + 1 })
        .where("id", "=", row.id)
        .execute();
      return null;
    }
    return row.id;
  }

  async #spendTry(db: Db, userId: string, sessionId: string, purpose: OtpPurpose, now: Date) {
    await db
      .updateTable("dashboard_otps")
      .set((eb) => ({ attempts: eb("attempts", "+", 1) }))
      .where("user_id", "=", userId)
      .where("session_id", "=", sessionId)
      .where("purpose", "=", purpose)
      .where("consumed_at", "is", null)
      .where("expires_at", ">", now)
      .execute();
  }
}
