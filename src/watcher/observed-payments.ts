import { type Expression, expressionBuilder, type SelectQueryBuilder, sql } from "kysely";
import type { Db } from "../db/database.js";
import type { DB } from "../db/schema.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * What the watcher saw of payments to an address before a deadline (issue #36: this folder owns
 * `chain_cursors` and `chain_observations`), for checkout sessions: fragments the caller composes
 * into its own statement (the expiry claim, the detections of sessions), and the check of one
 * session. The caller gives its side as expressions (e.g. `eb.ref("s.network")`), so these
 * fragments name no table but the watcher's.
 */

/** A payment target: the address on its chain and the deadline transfers count before. */
export interface PaymentTarget<D = Expression<Date>> {
  network: Expression<CurrencyType>;
  environment: Expression<Environment>;
  address: Expression<string>;
  deadline: D;
}

/** The chain time of the target's chain (the watcher's cursor block's timestamp): a scalar sub-query. */
export function chainTimeOf(target: Pick<PaymentTarget, "network" | "environment">) {
  return expressionBuilder<DB, never>()
    .selectFrom("chain_cursors as c")
    .select("c.chain_time")
    .where("c.network", "=", target.network)
    .where("c.environment", "=", target.environment);
}

/**
 * Transfers to the target still confirming (`observed`) and mined before its deadline: a sub-query
 * for `exists(…)`.
 */
export function confirmingTransfersInTime(target: PaymentTarget) {
  return expressionBuilder<DB, never>()
    .selectFrom("chain_observations as o")
    .select(sql`1`.as("one"))
    .where("o.network", "=", target.network)
    .where("o.environment", "=", target.environment)
    .where("o.address", "=", target.address)
    .where("o.status", "=", "observed")
    .where(sql<boolean>`coalesce(o.block_time, o.observed_at) < ${target.deadline}`);
}

/** Is a transfer to the address still confirming that was mined before `deadline`? One query. */
export async function hasConfirmingTransferBefore(
  db: Db,
  target: { network: CurrencyType; environment: Environment; address: string; deadline: Date },
): Promise<boolean> {
  const row = await db
    .selectNoFrom((eb) =>
      eb
        .exists(
          confirmingTransfersInTime({
            network: eb.val(target.network),
            environment: eb.val(target.environment),
            address: eb.val(target.address),
            deadline: eb.val(target.deadline),
          }),
        )
        .as("found"),
    )
    .executeTakeFirstOrThrow();
  return Boolean(row.found);
}

/** The columns `joinObservedPayments` adds to each row of the caller. */
export interface ObservedPaymentColumns {
  /** The chain's head block as the watcher last saw it (null: no cursor yet). */
  head_block: bigint | number | null;
  /** The first block time of the transfers in time (null: none). */
  detected_at: Date | string | null;
  /** Their sum (null: none). */
  detected_amount: string | null;
  /** Their newest block number (the least confirmed; null: none). */
  newest_block: string | number | bigint | null;
}

/**
 * Adds to the caller's query (one row per target, selected and grouped by the caller first) what
 * the chain shows of the payment to each target: over the transfers to its address mined before its
 * deadline and not reorganised away (left joined: a target without any keeps its row), the first
 * block time, the sum and the newest block, and the head block of the watcher's cursor (joined and
 * added to the caller's `group by`). One statement with the caller's.
 */
export function joinObservedPayments<QDB, TB extends keyof QDB, O>(
  query: SelectQueryBuilder<QDB, TB, O>,
  target: PaymentTarget,
): SelectQueryBuilder<QDB, TB, O & ObservedPaymentColumns> {
  // Typed on the schema alone (the caller's tables and aliases are its own); the caller's types
  // are given back with the added columns.
  const joined = (query as unknown as SelectQueryBuilder<DB, never, O>)
    .leftJoin("chain_observations as o", (j) =>
      j
        .on("o.network", "=", target.network)
        .on("o.environment", "=", target.environment)
        .on("o.address", "=", target.address)
        .on("o.status", "<>", "reorged")
        .on(sql<boolean>`coalesce(o.block_time, o.observed_at) < ${target.deadline}`)
        // A transfer from a frozen or refused sender, held (README.md#frozen-funds), is not a
        // payment of the session: the page and `detectedAmount` do not count it, held, returned
        // or released alike (a release credits the merchant, it does not pay the order: outside
        // review, the page said "nothing left to pay" once one was released).
        .on(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("transactions as h")
                .select("h.id")
                .whereRef("h.chain_observation_id", "=", "o.id")
                .where("h.hold_reason", "is not", null),
            ),
          ),
        ),
    )
    .leftJoin("chain_cursors as c", (j) =>
      j.on("c.network", "=", target.network).on("c.environment", "=", target.environment),
    )
    .select([
      "c.head_block",
      sql<Date | string | null>`min(coalesce(o.block_time, o.observed_at))`.as("detected_at"),
      sql<string | null>`sum(o.amount)`.as("detected_amount"),
      sql<string | number | bigint | null>`max(o.block_number)`.as("newest_block"),
    ])
    .groupBy("c.head_block");
  return joined as unknown as SelectQueryBuilder<QDB, TB, O & ObservedPaymentColumns>;
}

/**
 * The sender of one stored observation (`obs_…`): where a held deposit's return goes
 * (README.md#frozen-funds). Undefined when there is no such observation.
 */
export async function observationSender(db: Db, observationId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom("chain_observations")
    .select("from_address")
    .where("id", "=", observationId)
    .executeTakeFirst();
  return row?.from_address;
}
