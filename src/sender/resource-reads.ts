import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { requestTransfer, type TransferIntent } from "./intents.js";
import { OPEN_STATES } from "./transfer-states.js";
import type { SenderScope } from "./transfer-store.js";

/**
 * Reads of the energy engine's intents (issue #38; `outgoing_transfers` stays the sender's): what
 * the resource account has on its way, and which delegations are due to come back.
 */

/**
 * The reclaim of a delegation has this intent id: one per delegation and try, however many workers
 * look (`rcl_<delegation>`, then `rcl_<delegation>_<n>` after n failed tries). The signer reads the
 * delegation back from it (signer/evidence.ts).
 */
export function reclaimIntentId(delegationId: string, failedTries = 0): string {
  return failedTries === 0 ? `rcl_${delegationId}` : `rcl_${delegationId}_${failedTries}`;
}

/** Sun of stake (per resource) in delegations from `fromIndex` not mined yet: not delegatable again. */
export async function delegationsInFlight(db: Db, scope: SenderScope, fromIndex: number): Promise<bigint> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select((eb) => eb.fn.sum<string | null>("amount").as("sum"))
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("from_index", "=", fromIndex)
    .where("kind", "=", "resource_delegation")
    .where("status", "in", OPEN_STATES)
    .executeTakeFirst();
  return BigInt(row?.sum ?? "0");
}

/**
 * When the latest delegation to `to` (normalised) still open was requested, or null: transfers from
 * `to` wait for it (the energy gate decides for how long).
 */
export async function openDelegationTo(db: Db, scope: SenderScope, to: string): Promise<Date | null> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select((eb) => eb.fn.max("created_at").as("latest"))
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("kind", "=", "resource_delegation")
    .where("to_address", "=", to)
    .where("status", "in", OPEN_STATES)
    .executeTakeFirst();
  return row?.latest ? new Date(row.latest as Date | string) : null;
}

/**
 * Queues `intent` (a delegation to `to`) unless a delegation to `to` is open already, under a
 * transaction-scoped lock on the receiver: two workers gating the same hot wallet at once queue one
 * delegation, not two (the signer refuses a second one on its way, and each would then wait for
 * the other: the cluster fault test of issue #38 found it). Returns whether it queued.
 */
export async function requestDelegationUnlessOpen(
  db: Db,
  scope: SenderScope,
  intent: TransferIntent & { to: string },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const key = `delegation:${scope.network}:${scope.environment}:${intent.to}`;
    await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(trx);
    if (await openDelegationTo(trx, scope, intent.to)) return false;
    await requestTransfer(trx, intent);
    return true;
  });
}

/** Whether the resource account has a stake on its way (one at a time). */
export async function hasOpenStake(db: Db, scope: SenderScope): Promise<boolean> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("kind", "=", "resource_stake")
    .where("status", "in", OPEN_STATES)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Is a delegation taken back, or being taken back (a reclaim open or confirmed)? A sweep waiting for
 * it can then no longer be paid for by it.
 */
export async function delegationTakenBack(db: Db, delegationIntentId: string): Promise<boolean> {
  // Its reclaims' ids, first and retried: a primary-key lookup.
  const ids = Array.from({ length: RECLAIM_RETRIES + 1 }, (_, n) => reclaimIntentId(delegationIntentId, n));
  const row = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("intent_id", "in", ids)
    .where("kind", "=", "resource_reclaim")
    .where("status", "<>", "failed")
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Whether the hot wallet (`hotIndex`) has a token transfer still open: a delegation to it serves
 * only those, and one queued after they all finished has nothing left to serve.
 */
export async function hotWalletTransfersOpen(db: Db, scope: SenderScope, hotIndex: number): Promise<boolean> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("from_index", "=", hotIndex)
    .where("asset", "=", "token")
    .where("status", "in", OPEN_STATES)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** A confirmed delegation whose use is over and that is not taken back (nor being taken back). */
export interface DueReclaim {
  intentId: string;
  fromIndex: number;
  to: string;
  amount: bigint;
  asset: "energy" | "bandwidth";
  /** The reclaim's intent id: `rcl_<delegation>`, or `rcl_<delegation>_<n>` after n failed ones. */
  reclaimId: string;
}

/** A failed reclaim is tried again this much later, at most this many times (then the alert stands). */
const RECLAIM_RETRY_MS = 10 * 60_000;
const RECLAIM_RETRIES = 5;

/**
 * Confirmed delegations to take back: one to a deposit address once the sweep that waited for it is
 * final, one to the hot wallet (`hot`) once no token transfer from it is open — or either once it
 * has been out longer than `staleMs` (a sweep or payment the signer refuses stays open: outside
 * review of issue #38). None with an open or confirmed reclaim; after a failed one, again
 * `RECLAIM_RETRY_MS` later, up to `RECLAIM_RETRIES` times.
 */
export async function dueReclaims(
  db: Db,
  scope: SenderScope,
  hot: { index: number; address: string },
  at: { now: Date; staleMs: number },
  limit = 100,
): Promise<DueReclaim[]> {
  const stale = new Date(at.now.getTime() - at.staleMs);
  const retryAfter = new Date(at.now.getTime() - RECLAIM_RETRY_MS);
  const rows = await db
    .selectFrom("outgoing_transfers as d")
    .select([
      "d.intent_id",
      "d.from_index",
      "d.to_address",
      "d.amount",
      "d.asset",
      // Its reclaims so far, all failed (the filter below): how many, and when the last ended.
      sql<string>`(select count(*) from outgoing_transfers r
        where r.kind = 'resource_reclaim' and starts_with(r.intent_id, 'rcl_' || d.intent_id))`.as("tries"),
    ])
    .where("d.network", "=", scope.network)
    .where("d.environment", "=", scope.environment)
    .where("d.kind", "=", "resource_delegation")
    .where("d.status", "=", "confirmed")
    // reclaimIntentId, in SQL: none open or confirmed, none failed lately.
    .where(
      sql<boolean>`not exists (select from outgoing_transfers r
        where r.kind = 'resource_reclaim' and starts_with(r.intent_id, 'rcl_' || d.intent_id)
          and (r.status <> 'failed' or r.finished_at > ${retryAfter}))`,
    )
    .where(({ or, and, eb, not, exists, selectFrom }) =>
      or([
        // Stale: out too long. Not while a transfer waiting for it is signed or broadcast (its bytes
        // may still be mined, and need the energy); a queued one fails unsigned once the reclaim is
        // open (sender/signing.ts), and the sweeper plans it again.
        and([
          eb("d.finished_at", "<", stale),
          not(
            exists(
              selectFrom("outgoing_transfers as s")
                .select("s.intent_id")
                .whereRef("s.after_intent_id", "=", "d.intent_id")
                .where("s.status", "in", ["signed", "broadcast"]),
            ),
          ),
        ]),
        and([
          eb("d.to_address", "<>", hot.address),
          not(
            exists(
              selectFrom("outgoing_transfers as s")
                .select("s.intent_id")
                .whereRef("s.after_intent_id", "=", "d.intent_id")
                .where("s.status", "in", OPEN_STATES),
            ),
          ),
        ]),
        and([
          eb("d.to_address", "=", hot.address),
          not(
            exists(
              selectFrom("outgoing_transfers as w")
                .select("w.intent_id")
                .where("w.network", "=", scope.network)
                .where("w.environment", "=", scope.environment)
                .where("w.from_index", "=", hot.index)
                .where("w.asset", "=", "token")
                .where("w.status", "in", OPEN_STATES),
            ),
          ),
        ]),
      ]),
    )
    .orderBy("d.finished_at")
    .limit(limit)
    .execute();
  return rows
    .filter((r) => Number(r.tries) <= RECLAIM_RETRIES)
    .map((r) => ({
      intentId: r.intent_id,
      fromIndex: Number(r.from_index),
      to: r.to_address,
      amount: BigInt(r.amount),
      asset: r.asset as "energy" | "bandwidth",
      reclaimId: reclaimIntentId(r.intent_id, Number(r.tries)),
    }));
}
