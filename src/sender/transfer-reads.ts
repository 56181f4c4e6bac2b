import { type Expression, type QueryCreator, sql } from "kysely";
import type { Db } from "../db/database.js";
import type { DB } from "../db/schema.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { OPEN_STATES } from "./transfer-states.js";
import type { SenderScope } from "./transfer-store.js";

/**
 * Reads of the sender's tables (`outgoing_transfers`, `sending_wallets`) for the sweeper, the cold
 * forwarder and reserve reconciliation (issue #36: the tables' SQL stays here). Each runs on the
 * connection it is given (the caller's transaction, locks included), or is a fragment the caller
 * composes into its own statement: one statement as before.
 */

/** A value, or a column of the caller's query (a correlated fragment). */
type Operand<T> = T | Expression<T>;

// ---------------------------------------------------------------- wallets

/** The hot wallet's and gas tank's addresses as the sender recorded them (`recordSendingWallets`). */
export function sendingWalletAddresses(db: Db, scope: SenderScope) {
  return db
    .selectFrom("sending_wallets")
    .select(["role", "address"])
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .execute();
}

// ----------------------------------------------------------------- sweeps

/**
 * The open sweeps (and held-deposit returns) from one deposit address (by its derivation index), as a sub-query: the caller
 * wraps it in `exists(…)`, the index (and chain) a column of its query or a value.
 */
export function openSweepsFrom(
  db: QueryCreator<DB>,
  from: {
    network: Operand<CurrencyType>;
    environment: Operand<Environment>;
    fromIndex: Operand<bigint | number>;
  },
) {
  return (
    db
      .selectFrom("outgoing_transfers as t")
      .select("t.intent_id")
      .where("t.network", "=", from.network)
      .where("t.environment", "=", from.environment)
      // A held deposit's return (issue #40) moves coins out of the address too: a sweep waits for it.
      .where("t.kind", "in", ["sweep", "return"])
      .where("t.status", "in", OPEN_STATES)
      .where(sql<boolean>`t.from_index = ${from.fromIndex}`)
  );
}

/** Whether a sweep from `fromIndex` is open (read on `trx`: under the caller's lock). */
export async function hasOpenSweep(trx: Db, scope: SenderScope, fromIndex: number): Promise<boolean> {
  const open = await openSweepsFrom(trx, { ...scope, fromIndex })
    .limit(1)
    .executeTakeFirst();
  return open !== undefined;
}

/**
 * The total of the confirmed sweeps from one deposit address, as a scalar sub-query (null: none),
 * `fromIndex` a column of the caller's query.
 */
export function confirmedSweptFrom(
  db: QueryCreator<DB>,
  scope: SenderScope,
  fromIndex: Expression<bigint | number>,
) {
  return db
    .selectFrom("outgoing_transfers as t")
    .select((eb) => eb.fn.sum<string | null>("t.amount").as("swept"))
    .where("t.network", "=", scope.network)
    .where("t.environment", "=", scope.environment)
    .where("t.kind", "=", "sweep")
    .where("t.status", "=", "confirmed")
    .where(sql<boolean>`t.from_index = ${fromIndex}`);
}

/** The chain and source address of a transfer (a failed sweep's address is looked at again). */
export function findTransferSource(trx: Db, intentId: string) {
  return trx
    .selectFrom("outgoing_transfers")
    .select(["network", "environment", "from_address", "from_index"])
    .where("intent_id", "=", intentId)
    .executeTakeFirst();
}

// ------------------------------------------------------------ cold wallet

/** Whether a cold forward is open or was updated after `since` (read on the caller's `trx`). */
export async function hasRecentColdForward(trx: Db, scope: SenderScope, since: Date): Promise<boolean> {
  const recent = await trx
    .selectFrom("outgoing_transfers")
    .select(["status", "updated_at"])
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("kind", "=", "cold_forward")
    .where((eb) => eb.or([eb("status", "in", OPEN_STATES), eb("updated_at", ">", since)]))
    .limit(1)
    .executeTakeFirst();
  return recent !== undefined;
}

/** The token amount open withdrawals and payouts will take from the hot wallet. */
export async function openOutflow(trx: Db, scope: SenderScope): Promise<bigint> {
  const demand = await trx
    .selectFrom("outgoing_transfers")
    .select((eb) => eb.fn.sum<string | null>("amount").as("total"))
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("kind", "in", ["withdrawal", "payout"])
    .where("asset", "=", "token")
    .where("status", "in", OPEN_STATES)
    .executeTakeFirstOrThrow();
  return BigInt(demand.total ?? 0);
}

// --------------------------------------------------------------- reserves

/**
 * Token transfers not finished yet, in one read: withdrawals, payouts and held deposits' returns
 * (`outflow`: their tokens are still counted as held until they confirm, but leave the chain's
 * addresses when mined) and sweeps (`sweeps`: custody moving to the hot wallet).
 */
export async function tokenTransfersInFlight(
  db: Db,
  scope: SenderScope,
): Promise<{ outflow: bigint; sweeps: bigint }> {
  const flows = await db
    .selectFrom("outgoing_transfers")
    .select((eb) => [
      eb.fn
        .sum<string | null>(
          eb
            .case()
            .when("kind", "in", ["withdrawal", "payout", "return"])
            .then(eb.ref("amount"))
            .else(0)
            .end(),
        )
        .as("out"),
      eb.fn
        .sum<string | null>(eb.case().when("kind", "=", "sweep").then(eb.ref("amount")).else(0).end())
        .as("sweep"),
    ])
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("asset", "=", "token")
    .where("status", "in", OPEN_STATES)
    .executeTakeFirstOrThrow();
  return { outflow: BigInt(flows.out ?? 0), sweeps: BigInt(flows.sweep ?? 0) };
}
