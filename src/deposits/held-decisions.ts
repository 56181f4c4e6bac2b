import type { AuditRecorder } from "../audit/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { TransactionRecord } from "../domain/transaction.js";
import { releaseHeldDeposit, settleReturnedDeposit } from "../ledger/index.js";
import { chainObservationOf, lockTransaction, updateTransaction } from "../transactions/index.js";
import { observationSender } from "../watcher/index.js";
import { enqueueWebhookEvent, webhookData } from "../webhooks/index.js";
import { findCheckoutSessionsByIds } from "./sessions-store.js";

/**
 * Held deposits (README.md#frozen-funds): what a frozen or refused sender paid is
 * `held` until the owner or an admin decides. The api records the decision (it may not move
 * money: its database role cannot credit a deposit nor queue a transfer); a worker carries it out
 * (`sweep/held-decisions.ts`) with the functions below, each in the worker's transaction:
 *
 *   held ──release──▶ confirmed (credited: `netAmount` to available, `fee` to fees; webhook)
 *   held ──return───▶ returned (webhook; one transfer from the deposit address back to the
 *                     sender; the books move when it confirms) ──transfer failed──▶ held again
 */
export type HeldAction = "release" | "return";

type Scope = { merchantId: string; environment: Environment };

/**
 * Records the decision on a held deposit of the merchant (404 otherwise; 409 `INVALID_STATE` when
 * it is not `held` or was already decided), with its audit record, in one transaction. The
 * deposit's status changes when a worker carries the decision out, within a second or two.
 */
export async function decideHeldDeposit(
  db: Db,
  scope: Scope,
  id: string,
  action: HeldAction,
  decidedBy: string,
  audit?: AuditRecorder,
): Promise<TransactionRecord> {
  return db.transaction().execute(async (trx) => {
    const t = await lockTransaction(trx, id);
    if (
      !t ||
      t.merchantId !== scope.merchantId ||
      t.environment !== scope.environment ||
      t.type !== "deposit"
    )
      throw AppError.notFound("No deposit with this id.");
    if (t.status !== "held")
      throw new AppError("INVALID_STATE", `The deposit is ${t.status}, not held.`, { status: t.status });
    const inserted = await trx
      .insertInto("held_deposit_decisions")
      .values({
        transaction_id: t.id,
        network: t.currencyType,
        environment: t.environment,
        action,
        decided_by: decidedBy,
      })
      .onConflict((oc) => oc.column("transaction_id").doNothing())
      .returning("action")
      .executeTakeFirst();
    if (!inserted)
      throw new AppError("INVALID_STATE", "A decision on this held deposit is already being carried out.", {
        status: t.status,
      });
    await audit?.record(trx, { targetId: t.id, details: { action, holdReason: t.holdReason } });
    return t;
  });
}

/** A decision not yet carried out, locked for this worker (`skip locked`: one worker per decision). */
export interface DueDecision {
  transactionId: string;
  action: HeldAction;
}

export async function claimDueDecision(
  trx: Db,
  chain: { network: CurrencyType; environment: Environment },
  now: Date,
): Promise<DueDecision | undefined> {
  const row = await trx
    .selectFrom("held_deposit_decisions")
    .select(["transaction_id", "action"])
    .where("network", "=", chain.network)
    .where("environment", "=", chain.environment)
    .where("applied_at", "is", null)
    .where((eb) => eb.or([eb("next_attempt_at", "is", null), eb("next_attempt_at", "<=", now)]))
    .orderBy("decided_at")
    .limit(1)
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
  return row ? { transactionId: row.transaction_id, action: row.action } : undefined;
}

/**
 * A decision that could not be carried out now (a chain fault): tried again after a back-off (5 s
 * doubling to 5 min), so it never blocks the decisions behind it. Its own transaction.
 */
export async function deferDecision(db: Db, transactionId: string, error: string, now: Date): Promise<void> {
  const row = await db
    .selectFrom("held_deposit_decisions")
    .select("attempts")
    .where("transaction_id", "=", transactionId)
    .executeTakeFirst();
  if (!row) return;
  const attempts = row.attempts + 1;
  const delayMs = Math.min(5_000 * 2 ** Math.min(attempts - 1, 10), 300_000);
  await db
    .updateTable("held_deposit_decisions")
    .set({ attempts, next_attempt_at: new Date(now.getTime() + delayMs), last_error: error.slice(0, 500) })
    .where("transaction_id", "=", transactionId)
    .where("applied_at", "is", null)
    .execute();
}

/** The held deposit a decision is about, locked; null (and the decision closed) when it is no longer held. */
export async function lockHeldDeposit(trx: Db, d: DueDecision, now: Date): Promise<TransactionRecord | null> {
  const t = await lockTransaction(trx, d.transactionId);
  if (t?.status === "held") return t;
  await markApplied(trx, d.transactionId, now, null);
  return null;
}

/** Release: `confirmed`, credited like any deposit (fee charged now), its webhook. */
export async function releaseDeposit(trx: Db, t: TransactionRecord, now: Date): Promise<TransactionRecord> {
  const updated = await updateTransaction(trx, t.id, {
    status: "confirmed",
    confirmedAt: now,
    updatedAt: now,
  });
  await releaseHeldDeposit(trx, postingContext(updated), updated.amount, updated.fee);
  await markApplied(trx, t.id, now, null);
  await notify(trx, updated);
  return updated;
}

/**
 * Where a return goes: the sender of the transfer the deposit was made of. Throws when it is not
 * recorded (a bug: every held deposit is one observed transfer).
 */
export async function returnDestination(db: Db, t: TransactionRecord): Promise<string> {
  const observation = await chainObservationOf(db, t.id);
  const sender = observation ? await observationSender(db, observation) : undefined;
  if (!sender) throw new Error(`held deposit ${t.id} has no recorded sender`);
  return sender;
}

/** Return: `returned`, its webhook; the caller queues the transfer `intentId` in the same transaction. */
export async function markReturned(
  trx: Db,
  t: TransactionRecord,
  intentId: string,
  now: Date,
): Promise<TransactionRecord> {
  const updated = await updateTransaction(trx, t.id, { status: "returned", updatedAt: now });
  await markApplied(trx, t.id, now, intentId);
  await notify(trx, updated);
  return updated;
}

/** The deposit a return transfer belongs to (the signer's evidence), or undefined. */
export async function returnBacking(
  db: Db,
  intentId: string,
): Promise<{ transactionId: string; action: HeldAction } | undefined> {
  const row = await db
    .selectFrom("held_deposit_decisions")
    .select(["transaction_id", "action"])
    .where("intent_id", "=", intentId)
    .executeTakeFirst();
  return row ? { transactionId: row.transaction_id, action: row.action } : undefined;
}

/**
 * The return's outcome, in the sender's transaction: confirmed → the held amount leaves the books
 * (`held` → on-chain out); failed → the deposit is `held` again (webhook) and its decision removed,
 * so the owner can decide anew. The address's coins never left on a failure.
 */
export async function applyReturnOutcome(
  trx: Db,
  intentId: string,
  status: "confirmed" | "failed",
  now: Date,
): Promise<void> {
  const backing = await returnBacking(trx, intentId);
  if (!backing) return;
  const t = await lockTransaction(trx, backing.transactionId);
  if (t?.status !== "returned") return;
  if (status === "confirmed") {
    await settleReturnedDeposit(trx, postingContext(t), t.amount);
    return;
  }
  await trx.deleteFrom("held_deposit_decisions").where("transaction_id", "=", t.id).execute();
  const held = await updateTransaction(trx, t.id, { status: "held", updatedAt: now });
  await notify(trx, held);
}

async function markApplied(
  trx: Db,
  transactionId: string,
  now: Date,
  intentId: string | null,
): Promise<void> {
  await trx
    .updateTable("held_deposit_decisions")
    .set({ applied_at: now, intent_id: intentId })
    .where("transaction_id", "=", transactionId)
    .execute();
}

function postingContext(t: TransactionRecord) {
  return {
    merchantId: t.merchantId,
    environment: t.environment,
    currencyType: t.currencyType,
    transactionId: t.id,
  };
}

/** The deposit's webhook: to its session's `callbackUrl` (with the session's metadata) when it has one. */
async function notify(trx: Db, t: TransactionRecord): Promise<void> {
  const [session] = t.checkoutSessionId ? await findCheckoutSessionsByIds(trx, [t.checkoutSessionId]) : [];
  await enqueueWebhookEvent(trx, {
    merchantId: t.merchantId,
    environment: t.environment,
    transactionId: t.id,
    type: "deposit",
    transactionStatus: t.status,
    data: webhookData(t, session ? { metadata: session.metadata, price: session.price } : null),
    url: session?.callbackUrl ?? null,
  });
}
