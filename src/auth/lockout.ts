import { createHash } from "node:crypto";
import type { Db } from "../db/database.js";

/**
 * Failed sign-ins are throttled, never the account (security issue 18, finding 10): a lock on the
 * account let anyone who knew a merchant's e-mail keep the merchant out. Two budgets, each a row
 * of `login_throttles` (PostgreSQL, so every instance sees them):
 *
 * - per (account, client IP): the e-mail tried — hashed, whether or not an account has it, so an
 *   unknown e-mail behaves exactly like a real one — from one address. Guessing one merchant's
 *   password from one address slows down; the owner at another address signs in at once.
 * - per client IP across all accounts: credential stuffing (one address, many e-mails, few tries
 *   each) meets its own, larger budget. A success does not give it back (an attacker's own
 *   account would reset it).
 *
 * Each budget: the first `free` consecutive failures cost nothing; each further one refuses that
 * subject from that IP for twice as long as the previous (1 min, 2 min, 4 min, … capped at 1 h).
 * A row quiet for its `forgetMs` after its lock ended starts again from zero. Refused attempts
 * are not counted (an owner behind the same NAT does not extend the attacker's lock) and the
 * password is not checked for them. Of concurrent attempts that all pass the check before any
 * failure is recorded, each is counted afterwards; the per-IP Auth rate-limit tier bounds them.
 */
export interface ThrottleBudget {
  free: number;
  forgetMs: number;
}

export const ACCOUNT_BUDGET: ThrottleBudget = { free: 5, forgetMs: 24 * 3600_000 };
export const IP_BUDGET: ThrottleBudget = { free: 20, forgetMs: 3600_000 };
export const FIRST_LOCK_MS = 60_000;
export const MAX_LOCK_MS = 60 * 60_000;

const ANY_ACCOUNT = "*";

/** How long a subject is refused after its `failures`-th consecutive failure (0 = not at all). */
export function lockDurationMs(failures: number, budget: ThrottleBudget): number {
  if (failures < budget.free) return 0;
  const doublings = Math.min(failures - budget.free, 20);
  return Math.min(FIRST_LOCK_MS * 2 ** doublings, MAX_LOCK_MS);
}

/** The rows a sign-in attempt is counted in. */
export interface ThrottleKeys {
  account: string;
  /** The client: its address, an IPv6 client's /64 (the rate limiter's `clientKey`). */
  ip: string;
}

/** The account subject is the SHA-256 of the e-mail as looked up (trimmed, lower case). */
export function throttleKeys(email: string, ip: string): ThrottleKeys {
  const account = createHash("sha256").update(email.trim().toLowerCase()).digest("hex");
  return { account, ip };
}

function budgets(keys: ThrottleKeys): Array<{ subject: string; budget: ThrottleBudget }> {
  return [
    { subject: keys.account, budget: ACCOUNT_BUDGET },
    { subject: ANY_ACCOUNT, budget: IP_BUDGET },
  ];
}

/** Milliseconds until an attempt with these keys may be made (0 = now). */
export async function throttledForMs(db: Db, keys: ThrottleKeys, now: Date): Promise<number> {
  const rows = await db
    .selectFrom("login_throttles")
    .select("locked_until")
    .where("ip", "=", keys.ip)
    .where("subject", "in", [keys.account, ANY_ACCOUNT])
    .where("locked_until", ">", now)
    .execute();
  return Math.max(0, ...rows.map((r) => new Date(r.locked_until as Date).getTime() - now.getTime()));
}

/** Counts a failed attempt in both budgets (atomically per row) and locks what is over budget. */
export async function recordFailure(db: Db, keys: ThrottleKeys, now: Date): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const { subject, budget } of budgets(keys)) {
      const forgetBefore = new Date(now.getTime() - budget.forgetMs);
      const row = await trx
        .insertInto("login_throttles")
        .values({ subject, ip: keys.ip, failures: 1, last_failure_at: now, locked_until: null })
        .onConflict((oc) =>
          oc.columns(["subject", "ip"]).doUpdateSet((eb) => ({
            // Quiet long enough after its last failure and its lock: start again.
            failures: eb
              .case()
              .when(
                eb.fn("greatest", ["login_throttles.last_failure_at", "login_throttles.locked_until"]),
                "<=",
                forgetBefore,
              )
              .then(1)
              .else(eb("login_throttles.failures", "+", 1))
              .end(),
            last_failure_at: now,
          })),
        )
        .returning("failures")
        .executeTakeFirstOrThrow();
      const lockMs = lockDurationMs(row.failures, budget);
      if (lockMs > 0) {
        await trx
          .updateTable("login_throttles")
          .set({ locked_until: new Date(now.getTime() + lockMs) })
          .where("subject", "=", subject)
          .where("ip", "=", keys.ip)
          .execute();
      }
    }
    // Rows quiet for longer than any forget period plus the longest lock are gone for good.
    await trx
      .deleteFrom("login_throttles")
      .where(
        "last_failure_at",
        "<",
        new Date(now.getTime() - Math.max(ACCOUNT_BUDGET.forgetMs, IP_BUDGET.forgetMs) - MAX_LOCK_MS),
      )
      .execute();
  });
}

/** A successful sign-in from an address: that (account, IP) pair starts again (the IP budget not). */
export async function recordSuccess(db: Db, keys: ThrottleKeys): Promise<void> {
  await db
    .deleteFrom("login_throttles")
    .where("subject", "=", keys.account)
    .where("ip", "=", keys.ip)
    .execute();
}

/**
 * The account's password was reset (its owner proved the mailbox): every per-account count of that
 * e-mail starts again, at every address. The per-IP budgets stay.
 */
export async function clearAccount(db: Db, email: string): Promise<void> {
  await db.deleteFrom("login_throttles").where("subject", "=", throttleKeys(email, "").account).execute();
}
