import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { OPEN_STATES } from "./transfer-states.js";
import type { SenderScope } from "./transfer-store.js";

/**
 * Reads of the energy engine's intents (issue #38; `outgoing_transfers` stays the sender's): what
 * the resource account has on its way, and which delegations are due to come back.
 */

/** The reclaim of a delegation has this intent id: one per delegation, however many workers look. */
export function reclaimIntentId(delegationId: string): string {
  return `rcl_${delegationId}`;
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

/** Whether a delegation to `to` (normalised) is open: its transfers wait for it. */
export async function hasOpenDelegationTo(db: Db, scope: SenderScope, to: string): Promise<boolean> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("kind", "=", "resource_delegation")
    .where("to_address", "=", to)
    .where("status", "in", OPEN_STATES)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
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

/** A confirmed delegation whose use is over and whose reclaim is not queued yet. */
export interface DueReclaim {
  intentId: string;
  fromIndex: number;
  to: string;
  amount: bigint;
  asset: "energy" | "bandwidth";
}

/**
 * Confirmed delegations to take back: one to a deposit address once the sweep that waited for it is
 * final; one to the hot wallet (`hotIndex`'s address `hot`) once no token transfer from the hot
 * wallet is open. Each without its reclaim (`reclaimIntentId`) yet.
 */
export async function dueReclaims(
  db: Db,
  scope: SenderScope,
  hot: { index: number; address: string },
  limit = 100,
): Promise<DueReclaim[]> {
  const rows = await db
    .selectFrom("outgoing_transfers as d")
    .select(["d.intent_id", "d.from_index", "d.to_address", "d.amount", "d.asset"])
    .where("d.network", "=", scope.network)
    .where("d.environment", "=", scope.environment)
    .where("d.kind", "=", "resource_delegation")
    .where("d.status", "=", "confirmed")
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("outgoing_transfers as r")
            .select("r.intent_id")
            // reclaimIntentId, in SQL.
            .where(sql<boolean>`r.intent_id = 'rcl_' || d.intent_id`),
        ),
      ),
    )
    .where(({ or, and, eb, not, exists, selectFrom }) =>
      or([
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
  return rows.map((r) => ({
    intentId: r.intent_id,
    fromIndex: Number(r.from_index),
    to: r.to_address,
    amount: BigInt(r.amount),
    asset: r.asset as "energy" | "bandwidth",
  }));
}
