import type {
  ExpectedTransfer,
  Paid,
  ResourceAction,
  SignedChainWriter,
  TransferCheck,
  TransferSpec,
} from "../chains/index.js";
import { ChainUnavailableError } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { TransferKind } from "../db/tables/sending.js";
import { retriedFailureLevel } from "../db/transient.js";
import { SignerRejectedError } from "../signer/index.js";
import { HOT_WALLET_INDEX } from "../wallet/index.js";
import { type CarriedSweep, carriedSweeps, markCarriedSigned } from "./batches.js";
import type { SenderContext } from "./context.js";
import type { FinalState } from "./transfer-states.js";
import {
  markAttemptBroadcast,
  markBroadcast,
  markFinished,
  noteBroadcastRefused,
  recheckDisputed,
  recordStepError,
  scheduleRecheck,
  type TransferRow,
} from "./transfer-store.js";

/** The steps both signing and progress use: build, broadcast, finish, reschedule, record an error. */

/** What the chain writer builds for a transfer sent from `from`. */
export function transferSpec(c: SenderContext, r: TransferRow, from: string): TransferSpec {
  const action = resourceActionOf(r.kind);
  return {
    asset: r.asset,
    environment: c.environment,
    from,
    fromIndex: r.from_index,
    to: r.to_address,
    amount: BigInt(r.amount),
    ...(action ? { action } : {}),
  };
}

/**
 * `transferSpec` with what the gas tank's batch transactions call (issue #39): a carrier's sweeps,
 * read in `db` (the signing transaction), or the sweeper a deployment creates.
 */
export async function specOf(c: SenderContext, db: Db, r: TransferRow, from: string): Promise<TransferSpec> {
  const spec = transferSpec(c, r, from);
  if (r.kind === "sweep_batch") {
    const items = await carriedSweeps(db, r.intent_id);
    return {
      ...spec,
      call: {
        kind: "sweep_batch",
        items: items.map((i) => ({
          from: c.address(i.from_index),
          fromIndex: i.from_index,
          amount: BigInt(i.amount),
        })),
      },
    };
  }
  if (r.kind === "sweeper_deploy")
    return { ...spec, call: { kind: "sweeper_deploy", hotWallet: hotWallet(c) } };
  return spec;
}

/** `expectedOf`, with a carrier's sweeps (each one's Transfer log) or the deployed sweeper's address. */
export async function expectedFor(c: SenderContext, r: TransferRow, from: string): Promise<ExpectedTransfer> {
  const expected = expectedOf(r, from);
  if (r.kind === "sweep_batch") {
    const items = await carriedSweeps(c.db, r.intent_id);
    return {
      ...expected,
      batch: items.map((i) => ({ from: c.address(i.from_index), amount: BigInt(i.amount) })),
    };
  }
  if (r.kind === "sweeper_deploy") return { ...expected, deploys: hotWallet(c) };
  return expected;
}

function hotWallet(c: SenderContext): string {
  return c.address(HOT_WALLET_INDEX);
}

/** A carrier signed in `trx` takes its sweeps along: they are signed with it. */
export async function signCarried(c: SenderContext, trx: Db, r: TransferRow, now: Date): Promise<void> {
  if (r.kind !== "sweep_batch") return;
  await markCarriedSigned(trx, await carriedSweeps(trx, r.intent_id), c.address, now);
}

/** What a mined attempt of `r` must show to count (its recipient, amount, and a resource's action). */
export function expectedOf(r: TransferRow, from: string): ExpectedTransfer {
  const action = resourceActionOf(r.kind);
  return { asset: r.asset, from, to: r.to_address, amount: BigInt(r.amount), ...(action ? { action } : {}) };
}

/** The Stake 2.0 action of the energy engine's kinds (issue #38); none for coin transfers. */
export function resourceActionOf(kind: TransferKind): ResourceAction | undefined {
  if (kind === "resource_stake") return "stake";
  if (kind === "resource_delegation") return "delegate";
  if (kind === "resource_reclaim") return "reclaim";
  return undefined;
}

/** Sends an attempt's stored bytes (idempotent), then records it broadcast (signed → broadcast). */
export async function broadcastAttempt(
  c: SenderContext,
  writer: SignedChainWriter,
  intentId: string,
  seq: number,
  raw: string,
): Promise<void> {
  const result = await writer.broadcast(raw);
  const now = new Date(c.clock.now());
  if (!result.accepted) {
    c.logger.warn({ intentId, seq, error: result.error }, "broadcast refused; will check the chain");
    await noteBroadcastRefused(c.db, intentId, `broadcast: ${result.error ?? "refused"}`, now);
  }
  await markAttemptBroadcast(c.db, intentId, seq, now);
  await markBroadcast(c.db, intentId, now);
}

/** Finishes a transfer in its own transaction; waits (rechecked in 10 s) while its kind has no handler. */
export async function finish(
  c: SenderContext,
  r: Pick<TransferRow, "intent_id" | "kind" | "status">,
  txHash: string | null,
  status: FinalState,
  reason: string | null,
  blockNumber: number | null = null,
  paid: Paid | null = null,
  delivered: readonly boolean[] | null = null,
): Promise<void> {
  if (!c.outcomes.handler(r.kind)) {
    c.logger.warn(
      { intentId: r.intent_id, kind: r.kind },
      "no outcome handler registered; the transfer waits",
    );
    return later(c, r.intent_id, 10_000);
  }
  await c.db
    .transaction()
    .execute((trx) => finishIn(c, trx, r, txHash, status, reason, blockNumber, paid, delivered));
}

/** Records the final state and calls the outcome hook in `trx`; nothing when already final. */
export async function finishIn(
  c: SenderContext,
  trx: Db,
  r: Pick<TransferRow, "intent_id" | "kind" | "status">,
  txHash: string | null,
  status: FinalState,
  reason: string | null,
  blockNumber: number | null = null,
  paid: Paid | null = null,
  delivered: readonly boolean[] | null = null,
): Promise<void> {
  const handler = c.outcomes.handler(r.kind);
  if (!handler) return;
  const now = new Date(c.clock.now());
  if (!(await markFinished(trx, r, { status, txHash, blockNumber, reason, now, paid }))) return;
  await handler(trx, { intentId: r.intent_id, kind: r.kind, status, txHash, reason });
  if (r.kind === "sweep_batch")
    await finishCarried(c, trx, await carriedSweeps(trx, r.intent_id), {
      txHash,
      status,
      reason,
      blockNumber,
      delivered,
    });
  c.logger.info(
    { intentId: r.intent_id, kind: r.kind, status, txHash, reason },
    "outgoing transfer finished",
  );
}

/**
 * A carrier's sweeps finish with it, in its transaction (issue #39): each is confirmed only when the
 * carrier was and its own Transfer log is in the receipt (`delivered`); otherwise failed, and its
 * address is looked at again (the sweep's outcome handler).
 */
async function finishCarried(
  c: SenderContext,
  trx: Db,
  items: readonly CarriedSweep[],
  carrier: {
    txHash: string | null;
    status: FinalState;
    reason: string | null;
    blockNumber: number | null;
    delivered: readonly boolean[] | null;
  },
): Promise<void> {
  for (const [i, item] of items.entries()) {
    const ok = carrier.status === "confirmed" && carrier.delivered?.[i] === true;
    const row = { intent_id: item.intent_id, kind: "sweep" as const, status: item.status };
    const reason = ok
      ? null
      : carrier.status === "confirmed"
        ? "its batch was mined without its Transfer"
        : `its batch failed (${carrier.reason ?? "unknown"})`;
    await finishIn(c, trx, row, carrier.txHash, ok ? "confirmed" : "failed", reason, carrier.blockNumber);
  }
}

/** An attempt the chain's providers disagree on (issue #34), with its hash. */
export type Disputed = Extract<TransferCheck, { state: "disputed" }> & { txHash: string };

/**
 * The providers disagree on one of the transfer's attempts: it stays open (neither confirmed nor
 * failed) and is looked at again. A disagreement that cannot be propagation (`alert`) is noted on
 * the transfer (`stablegate_outgoing_disputed`, `/readyz`) and logged as an alert once per episode.
 */
export async function disputeStep(
  c: SenderContext,
  r: Pick<TransferRow, "intent_id" | "kind">,
  d: Disputed,
): Promise<void> {
  const now = c.clock.now();
  const fresh = await recheckDisputed(
    c.db,
    r.intent_id,
    new Date(now + c.recheckMs),
    d.alert ? d.reason : null,
    new Date(now),
  );
  if (d.alert && fresh)
    c.logger.error(
      {
        alert: "chain_providers_disagree",
        intentId: r.intent_id,
        kind: r.kind,
        txHash: d.txHash,
        reason: d.reason,
      },
      "ALERT: chain providers disagree on a sent transfer; it stays open until they agree",
    );
  else if (!d.alert)
    c.logger.info(
      { intentId: r.intent_id, txHash: d.txHash, reason: d.reason },
      "chain providers do not agree on a sent transfer yet; it waits",
    );
}

/** The transfer is looked at again in `ms` (default: the sender's recheck interval). */
export async function later(c: SenderContext, intentId: string, ms = c.recheckMs): Promise<void> {
  await scheduleRecheck(c.db, intentId, new Date(c.clock.now() + ms));
}

/** A failed step: logged (a signer refusal as an alert), and the intents retried with backoff. */
export async function recordError(
  c: SenderContext,
  intentIds: string[],
  err: unknown,
  options: { queuedOnly?: boolean } = {},
): Promise<void> {
  const message = err instanceof Error ? err.message : String(err);
  const level = err instanceof ChainUnavailableError ? "warn" : retriedFailureLevel(err);
  c.logger[level]({ err, intents: intentIds.slice(0, 10) }, "outgoing transfer step failed; will retry");
  if (err instanceof SignerRejectedError) {
    // A policy refusal is a bug, not a chain state: keep the intent, alert, retry slowly.
    c.logger.error({ alert: "signer_rejected", intents: intentIds }, "ALERT: the signer refused a transfer");
  }
  if (intentIds.length === 0) return;
  await recordStepError(c.db, intentIds, message, options.queuedOnly ?? false);
}
