import {
  type FeeParams,
  type PreparedTransfer,
  type SignedChainWriter,
  type TransferCheck,
  TransferWouldFailError,
} from "../chains/index.js";
import type { TransferKind } from "../db/tables/sending.js";
import { type SenderContext, type SenderOptions, senderContext } from "./context.js";
import { isRecordedFrozen } from "./frozen-addresses.js";
import { BatchRefusedError, executeBatch, signBatch } from "./signing.js";
import {
  broadcastAttempt,
  type Disputed,
  disputeStep,
  expectedFor,
  finish,
  finishIn,
  later,
  recordError,
  specOf,
} from "./steps.js";
import {
  type AttemptRow,
  countOpen,
  insertAttempt,
  listAttempts,
  listDueOpen,
  listDueQueued,
  lockForNewAttempt,
  type TransferRow,
} from "./transfer-store.js";

export type { FaultPoint, SenderOptions } from "./context.js";

/** Transfers between the gateway's own addresses: failing one loses nothing (it is planned again). */
const CUSTODY_KINDS: ReadonlySet<TransferKind> = new Set([
  "sweep",
  "gas_topup",
  "resource_stake",
  "resource_delegation",
  "resource_reclaim",
  "sweep_batch",
  "sweeper_deploy",
]);

/** Open transfers checked on-chain concurrently. */
const CHECK_CONCURRENCY = 10;

/**
 * Drives the outgoing transfers of one (network, environment) from `queued` to `confirmed` or
 * `failed` (see docs/decisions/sending.md; the states and transitions: transfer-states.ts; their
 * SQL: transfer-store.ts):
 *
 * 1. **sign** (one transaction per sending address and batch, signing.ts): lock the address's
 *    nonce row, build each transfer, have the signer sign it, store nonce + signed bytes + hash,
 *    mark `signed`, commit. A crash before the commit leaves nothing (no bytes left the process,
 *    no nonce used).
 * 2. **broadcast** the stored bytes (idempotent: the same bytes again are "already known");
 *    mark `broadcast`.
 * 3. **check** every stored attempt on-chain; at the required depth the first mined one decides:
 *    receipt success AND the expected Transfer log → `confirmed`, anything else → `failed`. The
 *    state and the outcome hook run in ONE database transaction (exactly once per intent).
 *    With several providers the outcome is agreed (chains/pooled-writer.ts, issue #34): while they
 *    disagree on an attempt (`disputed`) nothing below is done for the transfer — it stays open,
 *    neither confirmed nor failed, no nonce or expiry rule applies — and an alert fires.
 * 4. **recover**: an attempt unknown to the node is re-broadcast (same bytes); one stuck in the
 *    mempool is replaced with higher fees at the SAME nonce (so at most one can ever be mined);
 *    a TRON transaction that expired unmined can never be mined, and only then is a new one signed.
 *
 * `tick()` runs all steps for everything due, so the same code is the start-up recovery and the
 * periodic job. Several workers may run it: signing claims rows with `for update skip locked`,
 * finishing is conditional on the row still being open.
 */
export class Sender {
  private readonly c: SenderContext;

  constructor(o: SenderOptions) {
    this.c = senderContext(o);
  }

  /**
   * One round: sign what is queued, then broadcast / check / recover what is open. Returns whether
   * anything was due (the job then comes back soon; with nothing due it sleeps until a request).
   */
  async tick(signal?: AbortSignal): Promise<boolean> {
    const queued = await this.signQueued(signal);
    const open = await this.progressOpen(signal);
    return queued + open > 0;
  }

  /** Runs rounds until nothing is open or `timeoutMs` passes (tests, benchmarks). */
  async drain(timeoutMs: number, pauseMs = 20): Promise<number> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      await this.tick();
      const open = await this.openCount();
      if (open === 0 || Date.now() > until) return open;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  }

  openCount(): Promise<number> {
    return countOpen(this.c.db, this.c);
  }

  // ---------------------------------------------------------------- sign

  /** Returns how many due queued transfers it saw (waiting ones included). */
  private async signQueued(signal?: AbortSignal): Promise<number> {
    const c = this.c;
    const queued = await listDueQueued(c.db, c, new Date(c.clock.now()));
    const byIndex = new Map<number, TransferRow[]>();
    for (const r of queued) {
      if (r.after_intent_id) {
        if (r.dep_status === "failed") {
          await finish(
            c,
            r,
            null,
            "failed",
            `the transfer it waited for failed (${r.dep_reason ?? "unknown"})`,
          );
          continue;
        }
        if (r.dep_status !== "confirmed") continue;
      }
      const list = byIndex.get(r.from_index) ?? [];
      list.push(r);
      byIndex.set(r.from_index, list);
    }
    for (const [index, rows] of byIndex) {
      if (signal?.aborted) return queued.length;
      // One batch per sending address and round: checking and recovery keep pace with signing.
      const batch = rows.slice(0, c.batchSize);
      // A source the token's issuer froze can never move the token: nothing is signed from it; its
      // transfers wait (README.md#frozen-funds), `/readyz` says why.
      if (
        await isRecordedFrozen(c.db, {
          network: c.network,
          environment: c.environment,
          address: c.address(index),
        })
      )
        continue;
      try {
        if (c.writer.kind === "database") await executeBatch(c, c.writer, index, batch);
        else await signBatch(c, c.writer, index, batch);
      } catch (err) {
        // Only the refused intents of a batch wait; the rest go in the next round. Rows another
        // worker signed meanwhile are left alone (queued only).
        const ids = err instanceof BatchRefusedError ? [...err.refused] : batch.map((r) => r.intent_id);
        await recordError(c, ids, err, { queuedOnly: true });
      }
    }
    return queued.length;
  }

  // ------------------------------------------------------------ progress

  /** Returns how many due open transfers it saw. */
  private async progressOpen(signal?: AbortSignal): Promise<number> {
    const c = this.c;
    const open = await listDueOpen(c.db, c, new Date(c.clock.now()));
    const step = async (r: TransferRow) => {
      try {
        await this.progress(r);
      } catch (err) {
        await recordError(c, [r.intent_id], err);
      }
    };
    // Signed but not broadcast: one by one in nonce order (a node never sees a gap). Broadcast
    // ones are only checked: several at a time.
    for (const r of open.filter((o) => o.status === "signed")) {
      if (signal?.aborted) return open.length;
      await step(r);
    }
    const broadcast = open.filter((o) => o.status === "broadcast");
    for (let i = 0; i < broadcast.length; i += CHECK_CONCURRENCY) {
      if (signal?.aborted) return open.length;
      await Promise.all(broadcast.slice(i, i + CHECK_CONCURRENCY).map(step));
    }
    return open.length;
  }

  private async progress(r: TransferRow): Promise<void> {
    const c = this.c;
    const writer = c.writer;
    const from = c.address(r.from_index);
    // EVM: read the account's mined nonce BEFORE the attempts and their receipts. An attempt is
    // stored before it is broadcast, so one mined by then (say another worker's replacement) is
    // in the list read after: "nonce used, no receipt of ours" is then never a race with our own
    // transaction being stored or mined in between.
    const minedNonce = writer.kind === "signed" && r.nonce !== null ? await writer.minedNonce(from) : null;
    const attempts = await listAttempts(c.db, r.intent_id);
    const latest = attempts[0];
    if (!latest) throw new Error(`open transfer ${r.intent_id} has no attempt`);
    // TRON: an expired attempt is refused by every node, so it is never sent (again): its broadcast
    // would fail for ever. It is checked like any other (a crashed process may have sent it);
    // unmined past the grace, a new one is signed below. (The 1,000-deposit bench found sweeps
    // stuck "signed" once their first broadcast had failed on a loaded node.)
    const expired =
      r.nonce === null && latest.expires_at !== null && c.clock.now() > latest.expires_at.getTime();
    if (r.status === "signed" && writer.kind === "signed" && !expired) {
      await broadcastAttempt(c, writer, r.intent_id, latest.seq, latest.raw);
      await c.fault?.("after-broadcast", [r.intent_id]);
    }
    const expected = await expectedFor(c, r, from);
    let anyPending = false;
    let disputed: Disputed | null = null;
    for (const a of attempts) {
      const check: TransferCheck = await writer.check(a.tx_hash, expected);
      if (check.state === "disputed") {
        // The providers disagree whether (or how) it was mined: nothing is decided on it.
        disputed ??= { ...check, txHash: a.tx_hash };
        continue;
      }
      if (check.state === "success" || check.state === "failed") {
        if (check.confirmations < c.confirmations) return later(c, r.intent_id);
        await c.fault?.("after-receipt", [r.intent_id]);
        return finish(
          c,
          r,
          a.tx_hash,
          check.state === "success" ? "confirmed" : "failed",
          check.state === "failed" ? check.reason : null,
          check.blockNumber,
          check.paid ?? null,
          check.state === "success" ? (check.delivered ?? null) : null,
        );
      }
      if (check.state === "pending") anyPending = true;
    }
    if (disputed) return disputeStep(c, r, disputed);
    if (writer.kind === "database") {
      // The simulator mined it in the recording transaction; unknown means a reorg dropped it.
      return finish(c, r, null, "failed", "the transaction is no longer on the chain");
    }
    const nowMs = c.clock.now();
    if (minedNonce !== null && r.nonce !== null && minedNonce > Number(r.nonce)) {
      // The nonce is used, and by none of our attempts: nothing of ours can be mined any more.
      return finish(c, r, null, "failed", "the nonce was used by another transaction");
    }
    if (
      r.nonce === null &&
      latest.expires_at &&
      !anyPending &&
      nowMs > latest.expires_at.getTime() + c.expiryGraceMs
    ) {
      // TRON: expired and unmined, so provably dropped. Only now is a new transaction signed.
      c.logger.warn(
        { intentId: r.intent_id, txHash: latest.tx_hash },
        "transaction expired unmined; signing a new one",
      );
      return this.resign(writer, r, from, latest, null);
    }
    if (r.nonce !== null && nowMs - latest.created_at.getTime() > c.stuckAfterMs) {
      c.logger.warn(
        { intentId: r.intent_id, txHash: latest.tx_hash },
        "transaction stuck; replacing it with higher fees at the same nonce",
      );
      return this.resign(writer, r, from, latest, latest.fee);
    }
    if (!anyPending && !expired) {
      // Unknown to the node (dropped from its mempool, or never arrived): the same bytes again.
      await broadcastAttempt(c, writer, r.intent_id, latest.seq, latest.raw);
    }
    await later(c, r.intent_id);
  }

  /** A new attempt: same nonce with higher fees (EVM), or a fresh transaction (TRON, after expiry). */
  private async resign(
    writer: SignedChainWriter,
    r: TransferRow,
    from: string,
    latest: AttemptRow,
    replacing: FeeParams | null,
  ): Promise<void> {
    const c = this.c;
    const signer = c.signer;
    if (!signer) throw new Error("no signer configured");
    let raw: string | null = null;
    const seq = latest.seq + 1;
    await c.db.transaction().execute(async (trx) => {
      raw = null; // a rolled-back attempt's signature is never broadcast (the transaction may run again)
      if (!(await lockForNewAttempt(trx, r.intent_id, latest.seq))) return;
      let p: PreparedTransfer;
      try {
        p = await writer.prepare(await specOf(c, trx, r, from), {
          nonce: r.nonce === null ? null : Number(r.nonce),
          ...(replacing ? { replacing } : {}),
        });
      } catch (err) {
        if (!(err instanceof TransferWouldFailError)) throw err;
        // TRON, every earlier attempt expired unmined: nothing of it can be mined any more. A move
        // between our own addresses (a sweep, a top-up, the energy engine's steps) fails, and is
        // planned again from what the chain holds now. A payment out is never failed here (were an
        // attempt mined after all, failing it would release its hold and pay it twice): it waits,
        // and the alert asks the operator to look.
        if (replacing === null && CUSTODY_KINDS.has(r.kind)) {
          await finishIn(c, trx, r, null, "failed", `re-sign refused, ${err.message}`);
          return;
        }
        c.logger.error(
          { alert: "resign_would_fail", intentId: r.intent_id, kind: r.kind, error: err.message },
          "ALERT: an outgoing transfer's earlier attempts were not mined and a new one would fail; it waits for the operator",
        );
        throw err;
      }
      const s = await signer.sign(p.signRequest, { db: trx, intentId: r.intent_id });
      await insertAttempt(trx, {
        intentId: r.intent_id,
        seq,
        txHash: s.hash,
        raw: s.raw,
        fee: p.fee,
        expiresAt: p.expiresAt,
      });
      raw = s.raw;
    });
    if (raw !== null) await broadcastAttempt(c, writer, r.intent_id, seq, raw);
    await later(c, r.intent_id);
  }
}
