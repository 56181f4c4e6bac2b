import { sql } from "kysely";
import type { FeeParams, Paid } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { OutgoingTransfersTable } from "../db/tables/sending.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { checkTransition, type FinalState, OPEN_STATES } from "./transfer-states.js";

/**
 * The SQL of the sender's transfer tables (`outgoing_transfers`, `outgoing_transfer_attempts`; the
 * nonce counters: nonce-store.ts). Every state change of a transfer is one named function here,
 * and each checks its transition with the state machine (transfer-states.ts) before it writes.
 */

/** The (network, environment) whose transfers one sender drives. */
export interface SenderScope {
  network: CurrencyType;
  environment: Environment;
}

export type TransferRow = Pick<
  OutgoingTransfersTable,
  "intent_id" | "kind" | "asset" | "from_index" | "to_address" | "after_intent_id"
> & {
  amount: string;
  nonce: bigint | number | null;
  status: string;
};

/** A due queued transfer with the state of the transfer it waits for (if any). */
export type QueuedRow = TransferRow & {
  dep_status: string | null;
  dep_reason: string | null;
  created_at: Date;
};

export interface AttemptRow {
  seq: number;
  tx_hash: string;
  raw: string;
  fee: FeeParams;
  expires_at: Date | null;
  broadcast_at: Date | null;
  created_at: Date;
}

// ------------------------------------------------------------------ reads

export async function countOpen(db: Db, scope: SenderScope): Promise<number> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("status", "in", OPEN_STATES)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Queued transfers due at `now`, oldest first (at most 500). */
export function listDueQueued(db: Db, scope: SenderScope, now: Date): Promise<QueuedRow[]> {
  return (
    db
      .selectFrom("outgoing_transfers as o")
      .leftJoin("outgoing_transfers as dep", "dep.intent_id", "o.after_intent_id")
      .select([
        "o.intent_id",
        "o.kind",
        "o.asset",
        "o.from_index",
        "o.to_address",
        "o.amount",
        "o.nonce",
        "o.status",
        "o.after_intent_id",
        "dep.status as dep_status",
        "dep.reason as dep_reason",
        "o.created_at",
      ])
      .where("o.network", "=", scope.network)
      .where("o.environment", "=", scope.environment)
      .where("o.status", "=", "queued")
      // A sweep carried by a batch is signed and finished with its carrier (batches.ts), never alone.
      .where("o.carried", "=", false)
      .where("o.next_attempt_at", "<=", now)
      .orderBy("o.created_at")
      .limit(500)
      .execute()
  );
}

/** Signed and broadcast transfers due at `now`, in nonce order (at most 500). */
export function listDueOpen(db: Db, scope: SenderScope, now: Date): Promise<TransferRow[]> {
  return db
    .selectFrom("outgoing_transfers")
    .select([
      "intent_id",
      "kind",
      "asset",
      "from_index",
      "to_address",
      "amount",
      "nonce",
      "status",
      "after_intent_id",
    ])
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("status", "in", ["signed", "broadcast"])
    .where("carried", "=", false)
    .where("next_attempt_at", "<=", now)
    .orderBy("nonce")
    .orderBy("created_at")
    .limit(500)
    .execute();
}

/** The transfer's attempts, newest first. */
export async function listAttempts(db: Db, intentId: string): Promise<AttemptRow[]> {
  return (await db
    .selectFrom("outgoing_transfer_attempts")
    .select(["seq", "tx_hash", "raw", "fee", "expires_at", "broadcast_at", "created_at"])
    .where("intent_id", "=", intentId)
    .orderBy("seq", "desc")
    .execute()) as AttemptRow[];
}

/**
 * Amount of `asset` already signed from `index` and not finished. Native: TRX being staked
 * (`resource_stake`, issue #38) leaves the spendable balance too.
 */
export async function sumInFlight(
  db: Db,
  scope: SenderScope,
  index: number,
  asset: "token" | "native",
): Promise<bigint> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select((eb) => eb.fn.sum<string | null>("amount").as("sum"))
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("from_index", "=", index)
    .where((eb) =>
      asset === "native"
        ? eb.or([eb("asset", "=", "native"), eb("kind", "=", "resource_stake")])
        : eb("asset", "=", asset),
    )
    .where("status", "in", ["signed", "broadcast"])
    .executeTakeFirst();
  return BigInt(row?.sum ?? "0");
}

// ------------------------------------------------------------- claiming

/** Locks those of `intentIds` still queued and not locked by another worker; returns their ids. */
export async function claimQueued(trx: Db, intentIds: string[]): Promise<Set<string>> {
  const claimed = await trx
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("intent_id", "in", intentIds)
    .where("status", "=", "queued")
    .forUpdate()
    .skipLocked()
    .execute();
  return new Set(claimed.map((c) => c.intent_id));
}

/** Locks one transfer if it is still queued and not locked by another worker. */
export async function claimOneQueued(trx: Db, intentId: string): Promise<boolean> {
  const locked = await trx
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("intent_id", "=", intentId)
    .where("status", "=", "queued")
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
  return locked !== undefined;
}

/**
 * Locks an open transfer before a new attempt is signed: true when it is still signed or
 * broadcast and `latestSeq` is still its latest attempt (no other worker replaced it meanwhile).
 */
export async function lockForNewAttempt(trx: Db, intentId: string, latestSeq: number): Promise<boolean> {
  const row = await trx
    .selectFrom("outgoing_transfers")
    .select("status")
    .where("intent_id", "=", intentId)
    .forUpdate()
    .executeTakeFirst();
  const last = await trx
    .selectFrom("outgoing_transfer_attempts")
    .select((eb) => eb.fn.max("seq").as("seq"))
    .where("intent_id", "=", intentId)
    .executeTakeFirst();
  return !(
    !row ||
    (row.status !== "signed" && row.status !== "broadcast") ||
    Number(last?.seq) !== latestSeq
  );
}

// ------------------------------------------------------------- attempts

export async function insertAttempt(
  trx: Db,
  a: { intentId: string; seq: number; txHash: string; raw: string; fee: FeeParams; expiresAt: number | null },
): Promise<void> {
  await trx
    .insertInto("outgoing_transfer_attempts")
    .values({
      intent_id: a.intentId,
      seq: a.seq,
      tx_hash: a.txHash,
      raw: a.raw,
      fee: JSON.stringify(a.fee),
      expires_at: a.expiresAt === null ? null : new Date(a.expiresAt),
    })
    .execute();
}

/** Simulator: the attempt of a transfer mined in the transaction that records it. */
export async function insertExecutedAttempt(
  trx: Db,
  intentId: string,
  txHash: string,
  now: Date,
): Promise<void> {
  await trx
    .insertInto("outgoing_transfer_attempts")
    .values({ intent_id: intentId, seq: 1, tx_hash: txHash, raw: "", fee: "{}", broadcast_at: now })
    .execute();
}

export async function markAttemptBroadcast(db: Db, intentId: string, seq: number, now: Date): Promise<void> {
  await db
    .updateTable("outgoing_transfer_attempts")
    .set({ broadcast_at: now })
    .where("intent_id", "=", intentId)
    .where("seq", "=", seq)
    .where("broadcast_at", "is", null)
    .execute();
}

// ------------------------------------------------------ state changes

/** queued → signed: the transfer's first attempt is stored (under the claim's lock). */
export async function markSigned(
  trx: Db,
  row: Pick<TransferRow, "intent_id" | "status">,
  s: { nonce: number | null; from: string; now: Date },
): Promise<void> {
  checkTransition(row.status, "signed");
  await trx
    .updateTable("outgoing_transfers")
    .set({
      status: "signed",
      nonce: s.nonce,
      from_address: s.from,
      waiting_funds_since: null,
      updated_at: s.now,
    })
    .where("intent_id", "=", row.intent_id)
    .execute();
}

/** queued → broadcast: the simulator mined it in this transaction (under the claim's lock). */
export async function markExecuted(
  trx: Db,
  row: Pick<TransferRow, "intent_id" | "status">,
  from: string,
  now: Date,
): Promise<void> {
  checkTransition(row.status, "broadcast");
  await trx
    .updateTable("outgoing_transfers")
    .set({ status: "broadcast", from_address: from, waiting_funds_since: null, updated_at: now })
    .where("intent_id", "=", row.intent_id)
    .execute();
}

/** The only state `markBroadcast` moves a transfer from (its SQL's condition). */
const BROADCAST_FROM = "signed" as const;

/** signed → broadcast, when still signed (a no-op for a transfer already broadcast or final). */
export async function markBroadcast(db: Db, intentId: string, now: Date): Promise<void> {
  checkTransition(BROADCAST_FROM, "broadcast");
  await db
    .updateTable("outgoing_transfers")
    .set({ status: "broadcast", updated_at: now })
    .where("intent_id", "=", intentId)
    .where("status", "=", BROADCAST_FROM)
    .execute();
}

/**
 * open → confirmed | failed, when still open (`row.status` is the state the caller read). Returns
 * false when the row was already final (another worker finished it): nothing changed.
 */
export async function markFinished(
  trx: Db,
  row: Pick<TransferRow, "intent_id" | "status">,
  f: {
    status: FinalState;
    txHash: string | null;
    blockNumber: number | null;
    reason: string | null;
    now: Date;
    /** What the mined transaction cost (its receipt); null when nothing was mined. */
    paid?: Paid | null;
  },
): Promise<boolean> {
  checkTransition(row.status, f.status);
  const updated = await trx
    .updateTable("outgoing_transfers")
    .set({
      status: f.status,
      tx_hash: f.txHash,
      block_number: f.blockNumber,
      reason: f.reason,
      finished_at: f.now,
      updated_at: f.now,
      waiting_funds_since: null,
      fee_paid: f.paid ? f.paid.fee : null,
      resource_used: f.paid ? f.paid.used : null,
    })
    .where("intent_id", "=", row.intent_id)
    .where("status", "in", OPEN_STATES)
    .returning("intent_id")
    .executeTakeFirst();
  return updated !== undefined;
}

// --------------------------------------------- scheduling (no state change)

/** Prefix of `last_error` while the chain's providers disagree on the transfer (issue #34). */
export const DISPUTED_PREFIX = "disputed: ";

/**
 * The transfer is looked at again at `at`. A dispute noted on it is over (this recheck was not
 * decided by one), so the note goes (noteDisputed sets it again while the dispute lasts).
 */
export async function scheduleRecheck(db: Db, intentId: string, at: Date): Promise<void> {
  await db
    .updateTable("outgoing_transfers")
    .set({
      next_attempt_at: at,
      last_error: sql<
        string | null
      >`case when last_error like ${`${DISPUTED_PREFIX}%`} then null else last_error end`,
    })
    .where("intent_id", "=", intentId)
    .execute();
}

/**
 * The chain's providers disagree on the transfer: looked at again at `at`, the dispute noted in
 * `last_error` when `note` is given (what the open-disputes metric counts; a note already there
 * stays otherwise). Returns whether no dispute was noted before (a new episode: alert once).
 */
export async function recheckDisputed(
  db: Db,
  intentId: string,
  at: Date,
  note: string | null,
  now: Date,
): Promise<boolean> {
  const before = await db
    .selectFrom("outgoing_transfers")
    .select("last_error")
    .where("intent_id", "=", intentId)
    .executeTakeFirst();
  await db
    .updateTable("outgoing_transfers")
    .set({
      next_attempt_at: at,
      ...(note === null ? {} : { last_error: `${DISPUTED_PREFIX}${note}`.slice(0, 500), updated_at: now }),
    })
    .where("intent_id", "=", intentId)
    .execute();
  return !before?.last_error?.startsWith(DISPUTED_PREFIX);
}

/** A node refused the broadcast: noted on the transfer (the chain decides what happened). */
export async function noteBroadcastRefused(
  db: Db,
  intentId: string,
  error: string,
  now: Date,
): Promise<void> {
  await db
    .updateTable("outgoing_transfers")
    .set({ last_error: error.slice(0, 500), updated_at: now })
    .where("intent_id", "=", intentId)
    .execute();
}

/** A step failed: counted, noted, and retried with exponential backoff (1 s … 60 s). */
export async function recordStepError(
  db: Db,
  intentIds: string[],
  message: string,
  queuedOnly = false,
): Promise<void> {
  let q = db
    .updateTable("outgoing_transfers")
    .set({
      errors: sql<number>`errors + 1`,
      last_error: message.slice(0, 500),
      next_attempt_at: sql<Date>`now() + least(interval '60 seconds', interval '1 second' * power(2, least(errors, 6)))`,
    })
    .where("intent_id", "in", intentIds);
  // A signing step's error concerns what is still queued: a row another worker signed meanwhile
  // keeps its own schedule (its receipt is checked on time).
  if (queuedOnly) q = q.where("status", "=", "queued");
  await q.execute();
}

/** Marks queued transfers as waiting for funds since `now`; returns those not waiting before. */
export async function markWaitingFunds(db: Db, intentIds: string[], now: Date): Promise<string[]> {
  const fresh = await db
    .updateTable("outgoing_transfers")
    .set({ waiting_funds_since: now })
    .where("intent_id", "in", intentIds)
    .where("status", "=", "queued")
    .where("waiting_funds_since", "is", null)
    .returning("intent_id")
    .execute();
  return fresh.map((f) => f.intent_id);
}

/**
 * Queued transfers that cannot be signed yet (funds, delegated energy) are retried at `at`. Only
 * those still queued: a worker whose list is older than another's signing must not delay the
 * signed row's receipt check (the cluster fault test of issue #38 found sweeps waiting for funds
 * they had already spent).
 */
export async function deferQueued(
  db: Db,
  intentIds: string[],
  at: Date,
  lastError: string | null,
): Promise<void> {
  await db
    .updateTable("outgoing_transfers")
    .set(lastError === null ? { next_attempt_at: at } : { next_attempt_at: at, last_error: lastError })
    .where("intent_id", "in", intentIds)
    .where("status", "=", "queued")
    .execute();
}
