import { sql } from "kysely";
import { ChainUnavailableError } from "../chains/errors.js";
import {
  type ChainWriter,
  type DatabaseChainWriter,
  type ExpectedTransfer,
  type FeeParams,
  InsufficientFundsError,
  type PreparedTransfer,
  type SignedChainWriter,
  type TransferCheck,
  TransferWouldFailError,
} from "../chains/writer.js";
import type { Db } from "../db/database.js";
import type { OutgoingTransfersTable } from "../db/tables/sending.js";
import { retriedFailureLevel } from "../db/transient.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import { type Signer, SignerRejectedError } from "../signer/protocol.js";
import type { TransferOutcomes } from "./outcomes.js";

/** Where the fault-injection test kills the sending process. */
export type FaultPoint = "before-commit" | "after-commit" | "after-broadcast" | "after-receipt";

export interface SenderOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  writer: ChainWriter;
  /** Required for chains whose writer is "signed" (EVM, TRON). */
  signer: Signer | null;
  /** Address of an HD index of this (network, environment) (watch-only derivation). */
  address: (index: number) => string;
  outcomes: TransferOutcomes;
  /** A mined transfer is final (confirmed or failed) at this depth. */
  confirmations: number;
  logger: Logger;
  clock: Clock;
  /** An EVM transaction unmined for this long is replaced with higher fees at the same nonce. Default 3 min. */
  stuckAfterMs?: number;
  /** A TRON transaction unmined this long after its expiration is provably dropped and re-signed. Default 60 s. */
  expiryGraceMs?: number;
  /** Intents signed per sending address and round. Default 25. */
  batchSize?: number;
  /** How soon an open transfer is looked at again. Default 1 s. */
  recheckMs?: number;
  /** Tests: called at each crash-relevant step. */
  fault?: (point: FaultPoint, intentIds: string[]) => void | Promise<void>;
}

type Row = Pick<
  OutgoingTransfersTable,
  "intent_id" | "kind" | "asset" | "from_index" | "to_address" | "after_intent_id"
> & {
  amount: string;
  nonce: bigint | number | null;
  status: string;
};

interface AttemptRow {
  seq: number;
  tx_hash: string;
  raw: string;
  fee: FeeParams;
  expires_at: Date | null;
  broadcast_at: Date | null;
  created_at: Date;
}

const OPEN = ["queued", "signed", "broadcast"] as const;
/** Open transfers checked on-chain concurrently. */
const CHECK_CONCURRENCY = 10;

/**
 * Drives the outgoing transfers of one (network, environment) from `queued` to `confirmed` or
 * `failed` (see docs/decisions/sending.md):
 *
 * 1. **sign** (one transaction per sending address and batch): lock the address's nonce row, build
 *    each transfer, have the signer sign it, store nonce + signed bytes + hash, mark `signed`,
 *    commit. A crash before the commit leaves nothing (no bytes left the process, no nonce used).
 * 2. **broadcast** the stored bytes (idempotent: the same bytes again are "already known");
 *    mark `broadcast`.
 * 3. **check** every stored attempt on-chain; at the required depth the first mined one decides:
 *    receipt success AND the expected Transfer log → `confirmed`, anything else → `failed`. The
 *    state and the outcome hook run in ONE database transaction (exactly once per intent).
 * 4. **recover**: an attempt unknown to the node is re-broadcast (same bytes); one stuck in the
 *    mempool is replaced with higher fees at the SAME nonce (so at most one can ever be mined);
 *    a TRON transaction that expired unmined can never be mined, and only then is a new one signed.
 *
 * `tick()` runs all steps for everything due, so the same code is the start-up recovery and the
 * periodic job. Several workers may run it: signing claims rows with `for update skip locked`,
 * finishing is conditional on the row still being open.
 */
export class Sender {
  private readonly db: Db;
  private readonly stuckAfterMs: number;
  private readonly expiryGraceMs: number;
  private readonly batchSize: number;
  private readonly recheckMs: number;

  constructor(private readonly o: SenderOptions) {
    this.db = o.db;
    this.stuckAfterMs = o.stuckAfterMs ?? 180_000;
    this.expiryGraceMs = o.expiryGraceMs ?? 60_000;
    this.batchSize = o.batchSize ?? 25;
    this.recheckMs = o.recheckMs ?? 1_000;
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

  async openCount(): Promise<number> {
    const row = await this.db
      .selectFrom("outgoing_transfers")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("network", "=", this.o.network)
      .where("environment", "=", this.o.environment)
      .where("status", "in", OPEN)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  // ---------------------------------------------------------------- sign

  /** Returns how many due queued transfers it saw (waiting ones included). */
  private async signQueued(signal?: AbortSignal): Promise<number> {
    const now = new Date(this.o.clock.now());
    const queued = await this.db
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
      ])
      .where("o.network", "=", this.o.network)
      .where("o.environment", "=", this.o.environment)
      .where("o.status", "=", "queued")
      .where("o.next_attempt_at", "<=", now)
      .orderBy("o.created_at")
      .limit(500)
      .execute();
    const byIndex = new Map<number, Row[]>();
    for (const r of queued) {
      if (r.after_intent_id) {
        if (r.dep_status === "failed") {
          await this.finish(
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
      const batch = rows.slice(0, this.batchSize);
      try {
        if (this.o.writer.kind === "database") await this.executeBatch(this.o.writer, index, batch);
        else await this.signBatch(this.o.writer, index, batch);
      } catch (err) {
        await this.recordError(
          batch.map((r) => r.intent_id),
          err,
        );
      }
    }
    return queued.length;
  }

  /** Simulator: mine each transfer inside the transaction that records it. */
  private async executeBatch(writer: DatabaseChainWriter, index: number, rows: Row[]): Promise<void> {
    const from = this.o.address(index);
    for (const r of rows) {
      await this.db.transaction().execute(async (trx) => {
        const locked = await trx
          .selectFrom("outgoing_transfers")
          .select("intent_id")
          .where("intent_id", "=", r.intent_id)
          .where("status", "=", "queued")
          .forUpdate()
          .skipLocked()
          .executeTakeFirst();
        if (!locked) return;
        const { hash } = await writer.execute(trx, this.spec(r, from));
        await trx
          .insertInto("outgoing_transfer_attempts")
          .values({
            intent_id: r.intent_id,
            seq: 1,
            tx_hash: hash,
            raw: "",
            fee: "{}",
            broadcast_at: new Date(this.o.clock.now()),
          })
          .execute();
        await trx
          .updateTable("outgoing_transfers")
          .set({
            status: "broadcast",
            from_address: from,
            waiting_funds_since: null,
            updated_at: new Date(this.o.clock.now()),
          })
          .where("intent_id", "=", r.intent_id)
          .execute();
        await this.o.fault?.("before-commit", [r.intent_id]);
      });
    }
  }

  /** EVM/TRON: sign a batch under the address's nonce lock, commit, then broadcast. */
  private async signBatch(writer: SignedChainWriter, index: number, rows: Row[]): Promise<void> {
    const signer = this.o.signer;
    if (!signer) throw new Error("no signer configured (set SIGNER_URL or run serve)");
    const from = this.o.address(index);
    // Funds: the token must cover this batch plus what is already signed but not finished.
    const tokenRows = rows.filter((r) => r.asset === "token");
    let fundable = rows;
    if (tokenRows.length > 0) {
      const [balance, inFlight] = await Promise.all([
        writer.tokenBalance(from),
        this.inFlight(index, "token"),
      ]);
      let left = balance - inFlight;
      fundable = [];
      for (const r of rows) {
        if (r.asset === "token") {
          if (BigInt(r.amount) > left) continue;
          left -= BigInt(r.amount);
        }
        fundable.push(r);
      }
    }
    const unfunded = rows.filter((r) => !fundable.includes(r));
    if (unfunded.length > 0) await this.waitForFunds(unfunded, from, "token");
    if (fundable.length === 0) return;

    const nativeAvailable = (await writer.nativeBalance(from)) - (await this.inFlight(index, "native"));
    let native = nativeAvailable;
    const signed: { intentId: string; raw: string }[] = [];
    const poor: Row[] = [];
    await this.db.transaction().execute(async (trx) => {
      // The transaction runs again after a transient database fault (db/retrying-kysely.ts): what
      // a rolled-back attempt counted or signed must not be broadcast or spent twice.
      native = nativeAvailable;
      signed.length = 0;
      poor.length = 0;
      const claimed = await trx
        .selectFrom("outgoing_transfers")
        .select("intent_id")
        .where(
          "intent_id",
          "in",
          fundable.map((r) => r.intent_id),
        )
        .where("status", "=", "queued")
        .forUpdate()
        .skipLocked()
        .execute();
      const ids = new Set(claimed.map((c) => c.intent_id));
      const mine = fundable.filter((r) => ids.has(r.intent_id));
      if (mine.length === 0) return;
      const minedNonce = await writer.minedNonce(from);
      let nonce: number | null = null;
      if (minedNonce !== null) {
        await trx
          .insertInto("sender_nonces")
          .values({ network: this.o.network, environment: this.o.environment, address: from, next_nonce: 0 })
          .onConflict((oc) => oc.columns(["network", "environment", "address"]).doNothing())
          .execute();
        const row = await trx
          .selectFrom("sender_nonces")
          .select("next_nonce")
          .where("network", "=", this.o.network)
          .where("environment", "=", this.o.environment)
          .where("address", "=", from)
          .forUpdate()
          .executeTakeFirstOrThrow();
        nonce = Math.max(Number(row.next_nonce), minedNonce);
      }
      const prepared: { row: Row; p: PreparedTransfer }[] = [];
      for (const r of mine) {
        let p: PreparedTransfer;
        try {
          p = await writer.prepare(this.spec(r, from), { nonce, nativeBudget: native > 0n ? native : 0n });
        } catch (err) {
          if (err instanceof TransferWouldFailError) {
            await this.finishIn(trx, r, null, "failed", err.message);
            continue;
          }
          if (err instanceof InsufficientFundsError) {
            poor.push(r);
            continue;
          }
          throw err;
        }
        if (p.maxNativeCost > native) {
          poor.push(r);
          continue;
        }
        native -= p.maxNativeCost;
        prepared.push({ row: r, p });
        if (nonce !== null) nonce += 1;
      }
      // Sign the whole batch concurrently (the signer may be another process). An in-process
      // signer's policy reads the intents through this transaction (signer/policy.ts).
      const signatures = await Promise.all(prepared.map(({ p }) => signer.sign(p.signRequest, { db: trx })));
      const now = new Date(this.o.clock.now());
      for (let i = 0; i < prepared.length; i++) {
        const { row, p } = prepared[i]!;
        const s = signatures[i]!;
        await trx
          .insertInto("outgoing_transfer_attempts")
          .values({
            intent_id: row.intent_id,
            seq: 1,
            tx_hash: s.hash,
            raw: s.raw,
            fee: JSON.stringify(p.fee),
            expires_at: p.expiresAt === null ? null : new Date(p.expiresAt),
          })
          .execute();
        await trx
          .updateTable("outgoing_transfers")
          .set({
            status: "signed",
            nonce: p.nonce,
            from_address: from,
            waiting_funds_since: null,
            updated_at: now,
          })
          .where("intent_id", "=", row.intent_id)
          .execute();
        signed.push({ intentId: row.intent_id, raw: s.raw });
      }
      if (nonce !== null) {
        await trx
          .updateTable("sender_nonces")
          .set({ next_nonce: nonce })
          .where("network", "=", this.o.network)
          .where("environment", "=", this.o.environment)
          .where("address", "=", from)
          .execute();
      }
      await this.o.fault?.(
        "before-commit",
        signed.map((s) => s.intentId),
      );
    });
    if (poor.length > 0) await this.waitForFunds(poor, from, "native");
    if (signed.length === 0) return;
    await this.o.fault?.(
      "after-commit",
      signed.map((s) => s.intentId),
    );
    // In nonce order, so that the node never sees a gap.
    for (const s of signed) await this.broadcastAttempt(writer, s.intentId, 1, s.raw);
    await this.o.fault?.(
      "after-broadcast",
      signed.map((s) => s.intentId),
    );
  }

  private async broadcastAttempt(writer: SignedChainWriter, intentId: string, seq: number, raw: string) {
    const result = await writer.broadcast(raw);
    const now = new Date(this.o.clock.now());
    if (!result.accepted) {
      this.o.logger.warn({ intentId, seq, error: result.error }, "broadcast refused; will check the chain");
      await this.db
        .updateTable("outgoing_transfers")
        .set({ last_error: `broadcast: ${result.error ?? "refused"}`.slice(0, 500), updated_at: now })
        .where("intent_id", "=", intentId)
        .execute();
    }
    await this.db
      .updateTable("outgoing_transfer_attempts")
      .set({ broadcast_at: now })
      .where("intent_id", "=", intentId)
      .where("seq", "=", seq)
      .where("broadcast_at", "is", null)
      .execute();
    await this.db
      .updateTable("outgoing_transfers")
      .set({ status: "broadcast", updated_at: now })
      .where("intent_id", "=", intentId)
      .where("status", "=", "signed")
      .execute();
  }

  // ------------------------------------------------------------ progress

  /** Returns how many due open transfers it saw. */
  private async progressOpen(signal?: AbortSignal): Promise<number> {
    const now = new Date(this.o.clock.now());
    const open = await this.db
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
      .where("network", "=", this.o.network)
      .where("environment", "=", this.o.environment)
      .where("status", "in", ["signed", "broadcast"])
      .where("next_attempt_at", "<=", now)
      .orderBy("nonce")
      .orderBy("created_at")
      .limit(500)
      .execute();
    const step = async (r: Row) => {
      try {
        await this.progress(r);
      } catch (err) {
        await this.recordError([r.intent_id], err);
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

  private async progress(r: Row): Promise<void> {
    const writer = this.o.writer;
    const from = this.o.address(r.from_index);
    // EVM: read the account's mined nonce BEFORE the attempts and their receipts. An attempt is
    // stored before it is broadcast, so one mined by then (say another worker's replacement) is
    // in the list read after: "nonce used, no receipt of ours" is then never a race with our own
    // transaction being stored or mined in between.
    const minedNonce = writer.kind === "signed" && r.nonce !== null ? await writer.minedNonce(from) : null;
    const attempts = (await this.db
      .selectFrom("outgoing_transfer_attempts")
      .select(["seq", "tx_hash", "raw", "fee", "expires_at", "broadcast_at", "created_at"])
      .where("intent_id", "=", r.intent_id)
      .orderBy("seq", "desc")
      .execute()) as AttemptRow[];
    const latest = attempts[0];
    if (!latest) throw new Error(`open transfer ${r.intent_id} has no attempt`);
    if (r.status === "signed" && writer.kind === "signed") {
      await this.broadcastAttempt(writer, r.intent_id, latest.seq, latest.raw);
      await this.o.fault?.("after-broadcast", [r.intent_id]);
    }
    const expected: ExpectedTransfer = {
      asset: r.asset,
      from,
      to: r.to_address,
      amount: BigInt(r.amount),
    };
    let anyPending = false;
    for (const a of attempts) {
      const c: TransferCheck = await writer.check(a.tx_hash, expected);
      if (c.state === "success" || c.state === "failed") {
        if (c.confirmations < this.o.confirmations) return this.later(r.intent_id);
        await this.o.fault?.("after-receipt", [r.intent_id]);
        return this.finish(
          r,
          a.tx_hash,
          c.state === "success" ? "confirmed" : "failed",
          c.state === "failed" ? c.reason : null,
          c.blockNumber,
        );
      }
      if (c.state === "pending") anyPending = true;
    }
    if (writer.kind === "database") {
      // The simulator mined it in the recording transaction; unknown means a reorg dropped it.
      return this.finish(r, null, "failed", "the transaction is no longer on the chain");
    }
    const nowMs = this.o.clock.now();
    if (minedNonce !== null && r.nonce !== null && minedNonce > Number(r.nonce)) {
      // The nonce is used, and by none of our attempts: nothing of ours can be mined any more.
      return this.finish(r, null, "failed", "the nonce was used by another transaction");
    }
    if (
      r.nonce === null &&
      latest.expires_at &&
      !anyPending &&
      nowMs > latest.expires_at.getTime() + this.expiryGraceMs
    ) {
      // TRON: expired and unmined, so provably dropped. Only now is a new transaction signed.
      this.o.logger.warn(
        { intentId: r.intent_id, txHash: latest.tx_hash },
        "transaction expired unmined; signing a new one",
      );
      return this.resign(writer, r, from, latest, null);
    }
    if (r.nonce !== null && nowMs - latest.created_at.getTime() > this.stuckAfterMs) {
      this.o.logger.warn(
        { intentId: r.intent_id, txHash: latest.tx_hash },
        "transaction stuck; replacing it with higher fees at the same nonce",
      );
      return this.resign(writer, r, from, latest, latest.fee);
    }
    if (!anyPending) {
      // Unknown to the node (dropped from its mempool, or never arrived): the same bytes again.
      await this.broadcastAttempt(writer, r.intent_id, latest.seq, latest.raw);
    }
    await this.later(r.intent_id);
  }

  /** A new attempt: same nonce with higher fees (EVM), or a fresh transaction (TRON, after expiry). */
  private async resign(
    writer: SignedChainWriter,
    r: Row,
    from: string,
    latest: AttemptRow,
    replacing: FeeParams | null,
  ): Promise<void> {
    const signer = this.o.signer;
    if (!signer) throw new Error("no signer configured");
    let raw: string | null = null;
    const seq = latest.seq + 1;
    await this.db.transaction().execute(async (trx) => {
      raw = null; // a rolled-back attempt's signature is never broadcast (the transaction may run again)
      const row = await trx
        .selectFrom("outgoing_transfers")
        .select("status")
        .where("intent_id", "=", r.intent_id)
        .forUpdate()
        .executeTakeFirst();
      const last = await trx
        .selectFrom("outgoing_transfer_attempts")
        .select((eb) => eb.fn.max("seq").as("seq"))
        .where("intent_id", "=", r.intent_id)
        .executeTakeFirst();
      if (!row || (row.status !== "signed" && row.status !== "broadcast") || Number(last?.seq) !== latest.seq)
        return;
      const p = await writer.prepare(this.spec(r, from), {
        nonce: r.nonce === null ? null : Number(r.nonce),
        ...(replacing ? { replacing } : {}),
      });
      const s = await signer.sign(p.signRequest, { db: trx });
      await trx
        .insertInto("outgoing_transfer_attempts")
        .values({
          intent_id: r.intent_id,
          seq,
          tx_hash: s.hash,
          raw: s.raw,
          fee: JSON.stringify(p.fee),
          expires_at: p.expiresAt === null ? null : new Date(p.expiresAt),
        })
        .execute();
      raw = s.raw;
    });
    if (raw !== null) await this.broadcastAttempt(writer, r.intent_id, seq, raw);
    await this.later(r.intent_id);
  }

  // -------------------------------------------------------------- finish

  private async finish(
    r: Pick<Row, "intent_id" | "kind">,
    txHash: string | null,
    status: "confirmed" | "failed",
    reason: string | null,
    blockNumber: number | null = null,
  ): Promise<void> {
    if (!this.o.outcomes.handler(r.kind)) {
      this.o.logger.warn(
        { intentId: r.intent_id, kind: r.kind },
        "no outcome handler registered; the transfer waits",
      );
      return this.later(r.intent_id, 10_000);
    }
    await this.db.transaction().execute((trx) => this.finishIn(trx, r, txHash, status, reason, blockNumber));
  }

  /** Records the final state and calls the outcome hook in `trx`; nothing when already final. */
  private async finishIn(
    trx: Db,
    r: Pick<Row, "intent_id" | "kind">,
    txHash: string | null,
    status: "confirmed" | "failed",
    reason: string | null,
    blockNumber: number | null = null,
  ): Promise<void> {
    const handler = this.o.outcomes.handler(r.kind);
    if (!handler) return;
    const now = new Date(this.o.clock.now());
    const updated = await trx
      .updateTable("outgoing_transfers")
      .set({
        status,
        tx_hash: txHash,
        block_number: blockNumber,
        reason,
        finished_at: now,
        updated_at: now,
        waiting_funds_since: null,
      })
      .where("intent_id", "=", r.intent_id)
      .where("status", "in", OPEN)
      .returning("intent_id")
      .executeTakeFirst();
    if (!updated) return;
    await handler(trx, { intentId: r.intent_id, kind: r.kind, status, txHash, reason });
    this.o.logger.info(
      { intentId: r.intent_id, kind: r.kind, status, txHash, reason },
      "outgoing transfer finished",
    );
  }

  // ------------------------------------------------------------- helpers

  private spec(r: Row, from: string) {
    return {
      asset: r.asset,
      environment: this.o.environment,
      from,
      fromIndex: r.from_index,
      to: r.to_address,
      amount: BigInt(r.amount),
    };
  }

  /** Amount of `asset` already signed from `index` and not finished. */
  private async inFlight(index: number, asset: "token" | "native"): Promise<bigint> {
    const row = await this.db
      .selectFrom("outgoing_transfers")
      .select((eb) => eb.fn.sum<string | null>("amount").as("sum"))
      .where("network", "=", this.o.network)
      .where("environment", "=", this.o.environment)
      .where("from_index", "=", index)
      .where("asset", "=", asset)
      .where("status", "in", ["signed", "broadcast"])
      .executeTakeFirst();
    return BigInt(row?.sum ?? "0");
  }

  /** Not failed: stays queued, retried every 10 s; logged once per intent as an alert. */
  private async waitForFunds(rows: Row[], from: string, what: "token" | "native"): Promise<void> {
    const now = new Date(this.o.clock.now());
    const fresh = await this.db
      .updateTable("outgoing_transfers")
      .set({ waiting_funds_since: now })
      .where(
        "intent_id",
        "in",
        rows.map((r) => r.intent_id),
      )
      .where("waiting_funds_since", "is", null)
      .returning("intent_id")
      .execute();
    await this.db
      .updateTable("outgoing_transfers")
      .set({
        next_attempt_at: new Date(now.getTime() + 10_000),
        last_error: `waiting for ${what} funds on ${from}`,
      })
      .where(
        "intent_id",
        "in",
        rows.map((r) => r.intent_id),
      )
      .execute();
    if (fresh.length > 0) {
      this.o.logger.error(
        {
          alert: "sender_insufficient_funds",
          network: this.o.network,
          environment: this.o.environment,
          from,
          asset: what,
          intents: fresh.map((f) => f.intent_id),
        },
        "ALERT: sending address cannot pay queued transfers; they stay queued until it is funded",
      );
    }
  }

  private async later(intentId: string, ms = this.recheckMs): Promise<void> {
    await this.db
      .updateTable("outgoing_transfers")
      .set({ next_attempt_at: new Date(this.o.clock.now() + ms) })
      .where("intent_id", "=", intentId)
      .execute();
  }

  private async recordError(intentIds: string[], err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    const level = err instanceof ChainUnavailableError ? "warn" : retriedFailureLevel(err);
    this.o.logger[level](
      { err, intents: intentIds.slice(0, 10) },
      "outgoing transfer step failed; will retry",
    );
    if (err instanceof SignerRejectedError) {
      // A policy refusal is a bug, not a chain state: keep the intent, alert, retry slowly.
      this.o.logger.error(
        { alert: "signer_rejected", intents: intentIds },
        "ALERT: the signer refused a transfer",
      );
    }
    if (intentIds.length === 0) return;
    await this.db
      .updateTable("outgoing_transfers")
      .set({
        errors: sql<number>`errors + 1`,
        last_error: message.slice(0, 500),
        next_attempt_at: sql<Date>`now() + least(interval '60 seconds', interval '1 second' * power(2, least(errors, 6)))`,
      })
      .where("intent_id", "in", intentIds)
      .execute();
  }
}
