import type { Db } from "../db/database.js";
import { sessionOutcomeAtDeadline } from "../domain/checkout.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Job } from "../worker/runner.js";
import {
  type ClockTimedChain,
  claimExpiredSessionIds,
  lockCheckoutSession,
  underpaymentToleranceBp,
} from "./sessions-store.js";
import { closeSession, type SettleDeps } from "./settle.js";

/** How many sessions one run of the expiry job closes at most (each in its own transaction). */
const EXPIRY_BATCH = 200;

export interface ExpiryDeps extends SettleDeps {
  /** Chains whose time is the process clock (the sandbox simulator); the others use their block time. */
  clockTimedChains?: readonly ClockTimedChain[];
}

/**
 * Closes one open session whose deadline has passed — on the worker's clock and on its chain, with no
 * transfer in time still confirming (`claimExpiredSessionIds`) — if there is one no other worker
 * holds: `failed` with what arrived credited, or `confirmed` when that reaches the tolerance. Each
 * session in its own transaction, so one session's ledger locks are never held while another's are
 * taken. Returns false when none was due.
 */
export async function expireOneSession(db: Db, deps: ExpiryDeps, now: Date): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const [id] = await claimExpiredSessionIds(trx, now, 1, deps.clockTimedChains);
    if (!id) return false;
    const session = await lockCheckoutSession(trx, id);
    if (session?.transaction.status === "pending") {
      const received = session.transaction.actualBalance ?? 0n;
      const toleranceBp = await underpaymentToleranceBp(trx, session);
      await closeSession(trx, deps, session, {
        status: sessionOutcomeAtDeadline({ amount: session.transaction.amount, received, toleranceBp }),
        received,
        txHash: null,
        now,
      });
    }
    return true;
  });
}

/** Closes every due session (up to `limit` per call); returns how many. */
export async function expireDueSessions(
  db: Db,
  deps: ExpiryDeps,
  now: Date,
  limit = EXPIRY_BATCH,
): Promise<number> {
  let n = 0;
  while (n < limit && (await expireOneSession(db, deps, now))) n++;
  return n;
}

/** The expiry job of every worker: any number of workers close each session once (SKIP LOCKED + status check). */
export function sessionExpiryJob(
  deps: ExpiryDeps & { db: Db; clock: Clock; logger: Logger; everyMs: number },
): Job {
  return {
    name: "checkout-expiry",
    everyMs: deps.everyMs,
    async run(signal) {
      let closed = 0;
      do {
        closed = await expireDueSessions(deps.db, deps, new Date(deps.clock.now()));
        if (closed > 0) deps.logger.info({ closed }, "checkout sessions expired");
      } while (closed === EXPIRY_BATCH && !signal.aborted);
    },
  };
}
