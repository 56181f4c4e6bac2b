import { sql } from "kysely";
import { normalizeAddress } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { TransferKind } from "../db/tables/sending.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { HOT_WALLET_INDEX } from "../wallet/index.js";

export interface TransferIntent {
  /** The transaction id (`tx_…`) of the withdrawal/payout, or the sweep's own id; unique. */
  intentId: string;
  kind: TransferKind;
  network: CurrencyType;
  environment: Environment;
  to: string;
  /** Base units of the token (or of the native coin when `asset` is "native"). */
  amount: bigint;
  /** Default "token". Gas top-ups send the native coin; the energy engine's steps a resource. */
  asset?: "token" | "native" | "energy" | "bandwidth";
  /** HD index of the sending address; default the hot wallet (withdrawals and payouts). */
  fromIndex?: number;
  /** Do not sign before this intent is confirmed (a sweep waits for its gas top-up). */
  afterIntentId?: string;
}

/**
 * NOTIFY channel of new transfer requests: wakes the idle sender jobs when the request commits
 * (`request_transfer()`, migration 0025, sends it: keep the two names the same).
 */
export const TRANSFER_CHANNEL = "stablegate_transfers";

/**
 * Queues an outgoing transfer inside the caller's transaction `trx`: nothing is signed or sent
 * before that transaction commits; then the sender job picks it up (`senderJobs`: woken by a
 * NOTIFY on TRANSFER_CHANNEL, which PostgreSQL sends at the commit; polling covers a lost one). Idempotent on
 * `intentId` (a second call with the same id changes nothing). The final state arrives once
 * through `TransferOutcomes`.
 *
 * One statement, the database function `request_transfer()` (migration 0025): the api's database
 * role cannot write `outgoing_transfers`, and through the function it gets an intent only for a
 * `processing` withdrawal or payout with this destination, net amount and an open hold. Roles that
 * may write the table (the worker, the owner; PGlite's one user) get exactly the insert.
 */
export async function requestTransfer(trx: Db, intent: TransferIntent): Promise<void> {
  // A sweeper's deployment (issue #39) moves nothing: its amount is 0.
  const least = intent.kind === "sweeper_deploy" ? 0n : 1n;
  if (typeof intent.amount !== "bigint" || intent.amount < least)
    throw new RangeError("amount must be positive base units");
  const to = normalizeAddress(intent.network, intent.to);
  await sql`select request_transfer(${intent.intentId}, ${intent.kind}, ${intent.network}, ${intent.environment},
    ${intent.asset ?? "token"}, ${intent.fromIndex ?? HOT_WALLET_INDEX}::integer, ${to},
    ${intent.amount.toString()}::numeric, ${intent.afterIntentId ?? null})`.execute(trx);
}
