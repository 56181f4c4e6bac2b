import {
  type DatabaseChainWriter,
  InsufficientFundsError,
  normalizeAddress,
  type PreparedTransfer,
  type SignedChainWriter,
  TransferWouldFailError,
} from "../chains/index.js";
import type { Db } from "../db/database.js";
import { type Signer, SignerRejectedError } from "../signer/index.js";
import { HOT_WALLET_INDEX } from "../wallet/index.js";
import type { SenderContext } from "./context.js";
import { lockNextNonce, saveNextNonce } from "./nonce-store.js";
import { delegationTakenBack, hotWalletTransfersOpen } from "./resource-reads.js";
import { broadcastAttempt, finishIn, signCarried, specOf, transferSpec } from "./steps.js";
import {
  claimOneQueued,
  claimQueued,
  deferQueued,
  insertAttempt,
  insertExecutedAttempt,
  markExecuted,
  markSigned,
  type TransferRow,
} from "./transfer-store.js";

/** How soon a transfer waiting for delegated energy is looked at again. */
const ENERGY_WAIT_MS = 3_000;

/** A transfer signed in this round: its intent and the bytes to broadcast. */
interface Signed {
  intentId: string;
  raw: string;
}

/** The signer refused some intents of a batch (`refused`); the batch was not signed. */
export class BatchRefusedError extends SignerRejectedError {
  constructor(
    readonly refused: readonly string[],
    first: SignerRejectedError,
  ) {
    super(first.message);
    this.name = "BatchRefusedError";
  }
}

/** Simulator: mine each transfer inside the transaction that records it (queued → broadcast). */
export async function executeBatch(
  c: SenderContext,
  writer: DatabaseChainWriter,
  index: number,
  rows: TransferRow[],
): Promise<void> {
  const from = c.address(index);
  for (const r of rows) {
    const blocked = await blockedDestination(c, r);
    await c.db.transaction().execute(async (trx) => {
      if (!(await claimOneQueued(trx, r.intent_id))) return;
      if (blocked) {
        await finishIn(c, trx, r, null, "failed", blocked);
        return;
      }
      const { hash } = await writer.execute(trx, transferSpec(c, r, from));
      await insertExecutedAttempt(trx, r.intent_id, hash, new Date(c.clock.now()));
      await markExecuted(trx, r, from, new Date(c.clock.now()));
      await c.fault?.("before-commit", [r.intent_id]);
    });
  }
}

/**
 * EVM/TRON: sign a batch under the address's nonce lock, commit, then broadcast. Steps: keep what
 * the token balance covers, sign under the nonce lock (claim, reserve nonces, prepare within the
 * native budget, sign, store), let the unpayable wait for funds, broadcast what was signed.
 */
export async function signBatch(
  c: SenderContext,
  writer: SignedChainWriter,
  index: number,
  queued: TransferRow[],
): Promise<void> {
  const signer = c.signer;
  if (!signer) throw new Error("no signer configured (set SIGNER_URL or run serve)");
  const from = c.address(index);
  // A sweep whose delegated energy is being taken back (issue #38: it waited past the wait limit)
  // can no longer be paid for: failed unsigned, so that the sweeper plans it again (no waiting for
  // funds that will never come). A delegation to the hot wallet whose transfers all finished
  // without it: likewise (the signer would refuse it for ever).
  const takenBack = await energyTakenBack(c, queued);
  // A sweep whose rented energy was refused or never came (decision 21): likewise.
  for (const [id, reason] of (await c.energy?.failing?.(index, from, queued)) ?? [])
    takenBack.set(id, reason);
  if (takenBack.size > 0)
    await signUnderNonceLock(
      c,
      writer,
      signer,
      from,
      queued.filter((r) => takenBack.has(r.intent_id)),
      0n,
      takenBack,
    );
  const rows = queued.filter((r) => !takenBack.has(r.intent_id));
  if (rows.length === 0) return;
  // Funds: the token must cover this batch plus what is already signed but not finished.
  const funded = await c.funding.tokenFundable(writer, index, from, rows);
  // Energy (issue #38): what may be signed now; the rest waits for delegated energy a few seconds.
  const fundable = c.energy ? await c.energy.ready(index, from, funded) : funded;
  const waiting = funded.filter((r) => !fundable.includes(r));
  if (waiting.length > 0)
    await deferQueued(
      c.db,
      waiting.map((r) => r.intent_id),
      new Date(c.clock.now() + ENERGY_WAIT_MS),
      null,
    );
  if (fundable.length === 0) return;
  // Asked before the nonce lock is taken (the provider may be slow), for each transfer of the batch.
  const blocked = new Map<string, string>();
  for (const r of fundable) {
    const reason = await blockedDestination(c, r);
    if (reason) blocked.set(r.intent_id, reason);
  }
  const nativeAvailable = await c.funding.nativeAvailable(writer, index, from);
  const { signed, poor } = await signUnderNonceLock(
    c,
    writer,
    signer,
    from,
    fundable,
    nativeAvailable,
    blocked,
  );
  if (poor.length > 0) await c.funding.waitForFunds(poor, from, "native");
  if (signed.length === 0) return;
  await broadcastSigned(c, writer, signed);
}

/**
 * One database transaction: claim the still-queued rows, reserve their nonces, prepare each within
 * the native budget, sign them all, store the attempts and the next nonce. A crash before the
 * commit leaves nothing (no bytes left the process, no nonce used).
 */
async function signUnderNonceLock(
  c: SenderContext,
  writer: SignedChainWriter,
  signer: Signer,
  from: string,
  fundable: TransferRow[],
  nativeAvailable: bigint,
  blocked: ReadonlyMap<string, string>,
): Promise<{ signed: Signed[]; poor: TransferRow[] }> {
  // The transaction runs again after a transient database fault (db/retrying-kysely.ts): what a
  // rolled-back attempt counted or signed must not be broadcast or spent twice, so each run starts
  // afresh and only the committed run's result is returned.
  return c.db.transaction().execute(async (trx) => {
    const signed: Signed[] = [];
    const poor: TransferRow[] = [];
    const ids = await claimQueued(
      trx,
      fundable.map((r) => r.intent_id),
    );
    const claimed = fundable.filter((r) => ids.has(r.intent_id));
    // A destination frozen or refused since the request: failed unsigned (no nonce, nothing sent).
    for (const r of claimed) {
      const reason = blocked.get(r.intent_id);
      if (reason) await finishIn(c, trx, r, null, "failed", reason);
    }
    const mine = claimed.filter((r) => !blocked.has(r.intent_id));
    if (mine.length === 0) return { signed, poor };
    const firstNonce = await reserveNonce(c, trx, writer, from);
    const { prepared, nextNonce } = await prepareWithinBudget(c, trx, writer, from, mine, firstNonce, {
      native: nativeAvailable,
      poor,
    });
    // Sign the whole batch concurrently (the signer may be another process). An in-process
    // signer's policy reads the intents through this transaction (signer/policy.ts).
    const settled = await Promise.allSettled(
      prepared.map(({ row, p }) => signer.sign(p.signRequest, { db: trx, intentId: row.intent_id })),
    );
    // Nothing of the batch is kept unless all of it was signed (the nonces run on). A refusal names
    // its intents: only they wait (an intent the signer refuses must not hold up the address's
    // other transfers: the cluster fault test of issue #38 found one stalling every delegation).
    const failed = settled.flatMap((r, i) => (r.status === "rejected" ? [{ i, reason: r.reason }] : []));
    if (failed.length > 0) {
      const other = failed.find((f) => !(f.reason instanceof SignerRejectedError));
      if (other) throw other.reason;
      throw new BatchRefusedError(
        failed.map((f) => prepared[f.i]!.row.intent_id),
        failed[0]!.reason as SignerRejectedError,
      );
    }
    const signatures = settled.map(
      (r) => (r as PromiseFulfilledResult<Awaited<ReturnType<Signer["sign"]>>>).value,
    );
    const now = new Date(c.clock.now());
    for (let i = 0; i < prepared.length; i++) {
      const { row, p } = prepared[i]!;
      const s = signatures[i]!;
      await insertAttempt(trx, {
        intentId: row.intent_id,
        seq: 1,
        txHash: s.hash,
        raw: s.raw,
        fee: p.fee,
        expiresAt: p.expiresAt,
      });
      await markSigned(trx, row, { nonce: p.nonce, from, now });
      await signCarried(c, trx, row, now);
      signed.push({ intentId: row.intent_id, raw: s.raw });
    }
    if (nextNonce !== null) await saveNextNonce(trx, c, from, nextNonce);
    await c.fault?.(
      "before-commit",
      signed.map((s) => s.intentId),
    );
    return { signed, poor };
  });
}

/**
 * EVM: the first nonce of the batch, under the address's nonce row lock: the database's counter,
 * or the account's mined nonce when the chain is ahead of it. TRON has no nonce (null).
 */
async function reserveNonce(c: SenderContext, trx: Db, writer: SignedChainWriter, from: string) {
  const minedNonce = await writer.minedNonce(from);
  if (minedNonce === null) return null;
  return Math.max(await lockNextNonce(trx, c, from), minedNonce);
}

/**
 * Prepares each claimed row in order with consecutive nonces while the native budget lasts: one
 * that would revert fails now; one the budget cannot pay goes to `poor` (it waits for funds).
 */
async function prepareWithinBudget(
  c: SenderContext,
  trx: Db,
  writer: SignedChainWriter,
  from: string,
  rows: TransferRow[],
  firstNonce: number | null,
  budget: { native: bigint; poor: TransferRow[] },
): Promise<{ prepared: { row: TransferRow; p: PreparedTransfer }[]; nextNonce: number | null }> {
  let nonce = firstNonce;
  let native = budget.native;
  const prepared: { row: TransferRow; p: PreparedTransfer }[] = [];
  for (const r of rows) {
    let p: PreparedTransfer;
    try {
      p = await writer.prepare(await specOf(c, trx, r, from), {
        nonce,
        nativeBudget: native > 0n ? native : 0n,
      });
    } catch (err) {
      if (err instanceof TransferWouldFailError) {
        await finishIn(c, trx, r, null, "failed", err.message);
        continue;
      }
      if (err instanceof InsufficientFundsError) {
        budget.poor.push(r);
        continue;
      }
      throw err;
    }
    if (p.maxNativeCost > native) {
      budget.poor.push(r);
      continue;
    }
    native -= p.maxNativeCost;
    prepared.push({ row: r, p });
    if (nonce !== null) nonce += 1;
  }
  return { prepared, nextNonce: nonce };
}

/** After the commit: broadcast in nonce order, so that the node never sees a gap. */
async function broadcastSigned(c: SenderContext, writer: SignedChainWriter, signed: Signed[]): Promise<void> {
  const ids = signed.map((s) => s.intentId);
  await c.fault?.("after-commit", ids);
  for (const s of signed) await broadcastAttempt(c, writer, s.intentId, 1, s.raw);
  await c.fault?.("after-broadcast", ids);
}

/** The sweeps of `rows` whose delegated energy is taken back or being taken back, with the reason. */
async function energyTakenBack(c: SenderContext, rows: TransferRow[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const r of rows) {
    // A delegation to the hot wallet serves its open token transfers. Past the policy's wait they
    // go on without it (and burn); once none is open, the signer refuses it ("no payment from the
    // hot wallet … is open") on every round: the cluster fault test found one queued for ever.
    if (
      r.kind === "resource_delegation" &&
      r.to_address === normalizeAddress(c.network, c.address(HOT_WALLET_INDEX)) &&
      !(await hotWalletTransfersOpen(c.db, c, HOT_WALLET_INDEX))
    ) {
      out.set(
        r.intent_id,
        "energy_unneeded: the hot wallet's transfers it was asked for finished before it was signed",
      );
      continue;
    }
    // Only a sweep waiting for a delegation (the energy engine's `dlg_…`; others wait for a top-up).
    if (r.kind !== "sweep" || !r.after_intent_id?.startsWith("dlg_")) continue;
    if (await delegationTakenBack(c.db, r.after_intent_id))
      out.set(
        r.intent_id,
        `energy_taken_back: its delegation ${r.after_intent_id} is taken back before it was signed (it waited past the wait limit); the sweeper plans it again`,
      );
  }
  return out;
}

/**
 * Why a withdrawal's or payout's destination may not be paid now (`destination_blocked: …`), or
 * null; other kinds (sweeps, top-ups: to our own addresses) are not asked. A check that cannot be
 * made (the chain or provider is down) throws: the transfer stays queued and is tried again.
 */
async function blockedDestination(c: SenderContext, r: TransferRow): Promise<string | null> {
  if (!c.destinationCheck || (r.kind !== "withdrawal" && r.kind !== "payout")) return null;
  const reason = await c.destinationCheck(r.to_address, r.intent_id);
  return reason ? `destination_blocked: ${reason}` : null;
}
