import { sql } from "kysely";
import {
  type BlockHeader,
  type ChainAdapter,
  safeBlockFromHead,
  type TokenTransfer,
} from "../chains/adapter.js";
import { ChainTimeError, ChainUnavailableError } from "../chains/errors.js";
import type { ScanSettings } from "../chains/registry.js";
import type { Db } from "../db/database.js";
import { retriedFailureLevel } from "../db/transient.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { newId } from "../domain/ids.js";
import { type Clock, systemClock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { ConfirmedTransfer, DepositHandoff } from "./handoff.js";

export interface ChainWatcherOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  adapter: ChainAdapter;
  confirmations: number;
  scan: ScanSettings;
  handoff: DepositHandoff;
  logger: Logger;
  /** Lease owner id: the worker instance. Only the lease holder scans a (network, environment). */
  owner: string;
  clock?: Clock;
  /** Lease lifetime; renewed by every committed step. Default 20 s. */
  leaseMs?: number;
  /**
   * Where a chain that was never scanned starts: "genesis" (block 0; the simulator) or "safe" (the
   * safe block at the first run: addresses are only handed out once the service runs). Default "safe".
   */
  start?: "genesis" | "safe";
  /** Longest time one `tick` keeps scanning a backlog before it returns (and renews its lease). Default 10 s. */
  maxTickMs?: number;
  /** At most this many ranges per tick (tests stop a scan mid-backlog with it). Default unlimited. */
  maxRangesPerTick?: number;
  /** Block hashes kept behind the cursor for reorg detection. Default 2 000 blocks. */
  keepBlocks?: number;
  /**
   * A checkout address is matched until `watch_until` + this grace (measured at scan time), so that
   * a watcher that was down for less than the grace still credits payments made in time. Default 24 h.
   */
  matchGraceMs?: number;
  /** Back-off after a failed tick: doubles from `min` to `max`. Default 1 s .. 60 s. */
  backoff?: { minMs: number; maxMs: number };
}

export interface ScanResult {
  head: number;
  /** Newest block with the required confirmations: observations up to it are handed off. */
  safe: number;
  /** Cursor after the scan. */
  cursor: number;
  scannedBlocks: number;
  /** Transfers stored by this scan (confirmed or not yet). */
  observed: number;
  /** Block the cursor was rolled back to, when a reorg was detected. */
  reorgTo: number | null;
}

export type TickOutcome =
  | { kind: "scanned"; scan: ScanResult; handedOff: number }
  | { kind: "standby" }
  | { kind: "backoff"; untilMs: number }
  | { kind: "failed"; error: string };

const HANDOFF_BATCH = 200;

/**
 * The deposit watcher of one (network, environment): scans from the cursor to the head block in
 * adaptive block ranges with the adapter's log queries, matches recipients against
 * `watched_addresses` with ONE indexed query per range (`address = any($1)` on the primary key: the
 * cost per block does not depend on how many addresses are watched, and nothing is loaded into
 * memory), stores each match once (unique on network, tx hash, log index) as soon as it is in a
 * block, with that block's timestamp, then hands the transfers that have reached the required
 * confirmations (block <= `head - confirmations + 1`) to the deposit logic, one database
 * transaction each. `chain_observations` is the one record of what has arrived at an address: a
 * stored transfer's confirmations are `head - block + 1` (`chain_cursors.head_block`), so following
 * unconfirmed transfers costs nothing per block.
 *
 * Chain time: every committed range records its last block's timestamp as `chain_cursors.chain_time`
 * (block timestamps never go back, so any transfer not stored yet is at or after it). A chain whose
 * head block carries no usable timestamp is refused at the first tick, never guessed.
 *
 * Reorgs: the hash of the last block of every scanned range (and of every block with an
 * observation) is kept; before scanning on, the cursor block's hash is compared with the chain.
 * On a mismatch the cursor rolls back to the newest kept block that still matches, and
 * observations above it that were not handed off are deleted (an unconfirmed transfer that vanished
 * leaves no trace). Before a hand-off, the block of each observation is checked again.
 *
 * Several workers may run this for the same chain: a lease row (`chain_cursors.lease_owner`)
 * lets one scan at a time, every cursor move is conditional on holding the lease and on the cursor
 * being where the scan started, and the observation insert is idempotent anyway.
 *
 * `tick` never throws: RPC failures (timeouts at the adapter's 10–15 s) and database errors are
 * logged, recorded for `/readyz` and retried with exponential back-off.
 */
export class ChainWatcher {
  readonly network: CurrencyType;
  readonly environment: Environment;
  private readonly db: Db;
  private readonly adapter: ChainAdapter;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly leaseMs: number;
  private readonly maxTickMs: number;
  private readonly keepBlocks: number;
  private readonly matchGraceMs: number;
  private readonly backoff: { minMs: number; maxMs: number };
  private range: number;
  private failures = 0;
  private backoffUntil = 0;
  /** Whether the head block's timestamp was found usable (checked once, before the first scan). */
  private timeChecked = false;
  /** Set when the chain carries no usable block time: the watcher never scans it. */
  private refused: string | null = null;

  constructor(readonly options: ChainWatcherOptions) {
    this.network = options.network;
    this.environment = options.environment;
    this.db = options.db;
    this.adapter = options.adapter;
    this.clock = options.clock ?? systemClock;
    this.log = options.logger.child({ chain: `${options.network}/${options.environment}` });
    this.leaseMs = options.leaseMs ?? 20_000;
    this.maxTickMs = options.maxTickMs ?? 10_000;
    this.keepBlocks = options.keepBlocks ?? 2_000;
    this.matchGraceMs = options.matchGraceMs ?? 24 * 3600_000;
    this.backoff = options.backoff ?? { minMs: 1_000, maxMs: 60_000 };
    this.range = Math.max(1, Math.min(options.scan.initialRangeBlocks, options.scan.maxRangeBlocks));
  }

  /** Current adaptive range size (blocks per scan step). */
  get rangeBlocks(): number {
    return this.range;
  }

  /** One poll: lease, scan to the head block (or `maxTickMs`), hand off what is confirmed. Never throws. */
  async tick(signal?: AbortSignal): Promise<TickOutcome> {
    const now = this.clock.now();
    if (this.refused !== null) return { kind: "failed", error: this.refused };
    if (now < this.backoffUntil) return { kind: "backoff", untilMs: this.backoffUntil };
    try {
      if (!(await this.acquireLease())) return { kind: "standby" };
      if (!this.timeChecked) await this.checkChainTime();
      const scan = await this.scan(signal);
      const handedOff = await this.handOff(scan.safe);
      this.failures = 0;
      return { kind: "scanned", scan, handedOff };
    } catch (err) {
      this.failures += 1;
      const delay = Math.min(this.backoff.maxMs, this.backoff.minMs * 2 ** (this.failures - 1));
      this.backoffUntil = this.clock.now() + delay;
      const message = this.refused ?? describe(err);
      if (this.refused !== null) return { kind: "failed", error: message };
      if (err instanceof ChainUnavailableError) {
        this.log.warn({ err: message, retryInMs: delay }, "chain endpoint failed; backing off");
      } else {
        this.log[retriedFailureLevel(err)]({ err, retryInMs: delay }, "watcher tick failed; backing off");
      }
      await this.leaveError(message);
      return { kind: "failed", error: message };
    }
  }

  /**
   * Start-up check: the head block must carry a usable timestamp (on time is decided by block time,
   * CONTRACT §4.1). A chain without one is refused for good — logged, shown in `/readyz`, never
   * scanned — instead of falling back on this worker's clock. An unreachable endpoint is retried.
   */
  private async checkChainTime(): Promise<void> {
    const head = await this.adapter.headBlock();
    try {
      const header = await this.adapter.blockHeader(head);
      if (header === null)
        throw new ChainUnavailableError(this.network, `head block ${head} is not available`);
    } catch (err) {
      if (!(err instanceof ChainTimeError)) throw err;
      this.refused = `${err.message}: the chain's blocks carry no usable time, so this chain is not watched`;
      this.log.error({ err: err.message }, "chain refused at start-up: no usable block timestamps");
      await this.leaveError(this.refused);
      await this.releaseLease().catch(() => {});
      throw err;
    }
    this.timeChecked = true;
  }

  private async leaveError(message: string): Promise<void> {
    await this.db
      .updateTable("chain_cursors")
      .set({ last_error: message.slice(0, 500), last_error_at: new Date(this.clock.now()) })
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .execute()
      .catch(() => {});
  }

  /** Takes or renews the scanning lease. Creates the cursor row the first time. */
  async acquireLease(): Promise<boolean> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const row = await this.db
        .updateTable("chain_cursors")
        .set({
          lease_owner: this.options.owner,
          lease_until: sql`now() + ${`${this.leaseMs} milliseconds`}::interval`,
        })
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where((eb) =>
          eb.or([
            eb("lease_owner", "is", null),
            eb("lease_owner", "=", this.options.owner),
            eb("lease_until", "<", sql<Date>`now()`),
          ]),
        )
        .returning("cursor_block")
        .executeTakeFirst();
      if (row) return true;
      const exists = await this.db
        .selectFrom("chain_cursors")
        .select("cursor_block")
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .executeTakeFirst();
      if (exists) return false;
      // First run for this chain: start at genesis or at the current safe block.
      const start =
        this.options.start === "genesis"
          ? -1
          : safeBlockFromHead(await this.adapter.headBlock(), this.options.confirmations);
      await this.db
        .insertInto("chain_cursors")
        .values({ network: this.network, environment: this.environment, cursor_block: start })
        .onConflict((oc) => oc.columns(["network", "environment"]).doNothing())
        .execute();
    }
    return false;
  }

  /**
   * Gives the scanning lease up (graceful stop), so another instance — or this one restarted —
   * takes the chain over at once instead of after the lease's expiry.
   */
  async releaseLease(): Promise<void> {
    await this.db
      .updateTable("chain_cursors")
      .set({ lease_owner: null, lease_until: null })
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .where("lease_owner", "=", this.options.owner)
      .execute();
  }

  /** Scans from the cursor to the head block. The caller holds the lease. */
  async scan(signal?: AbortSignal): Promise<ScanResult> {
    const started = Date.now();
    const head = await this.adapter.headBlock();
    const safe = safeBlockFromHead(head, this.options.confirmations);
    let cursor = await this.cursor();
    let reorgTo: number | null = null;
    let scannedBlocks = 0;
    let observed = 0;

    // The tip moves: the cursor block is compared with the chain at every tick (also when nothing
    // new was mined: a block of the same height may have replaced it).
    const rolledBack = await this.checkCursorBlock(cursor);
    if (rolledBack !== null) {
      reorgTo = rolledBack;
      cursor = rolledBack;
    }
    const maxRanges = this.options.maxRangesPerTick ?? Number.POSITIVE_INFINITY;
    for (
      let ranges = 0;
      cursor < head && ranges < maxRanges && !signal?.aborted && Date.now() - started < this.maxTickMs;
      ranges++
    ) {
      const from = cursor + 1;
      const to = Math.min(head, cursor + this.range);
      let transfers: TokenTransfer[];
      let end: BlockHeader | null;
      let matched: TimedTransfer[];
      try {
        transfers = await this.adapter.tokenTransfers({ fromBlock: from, toBlock: to });
        end = await this.adapter.blockHeader(to);
        if (end === null) throw new ChainUnavailableError(this.network, `block ${to} is not available yet`);
        matched = await this.withBlockTimes(await this.match(transfers), end);
      } catch (err) {
        // Adaptive ranges: a failing range (too many logs, a provider's range cap, a timeout)
        // is halved for the next attempt; successes grow it back.
        this.range = Math.max(1, Math.floor(this.range / 2));
        throw err;
      }
      if (!(await this.commit(from, to, end, matched))) break;
      observed += matched.length;
      scannedBlocks += to - from + 1;
      cursor = to;
      this.range = Math.min(this.options.scan.maxRangeBlocks, this.range * 2);
    }
    await this.db
      .updateTable("chain_cursors")
      .set({
        head_block: head,
        safe_block: safe,
        head_seen_at: new Date(this.clock.now()),
        last_error: null,
        last_error_at: null,
      })
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .where("lease_owner", "=", this.options.owner)
      .execute();
    return { head, safe, cursor, scannedBlocks, observed, reorgTo };
  }

  /** Transfers whose recipient is watched: one indexed query per range, whatever the watched set's size. */
  private async match(transfers: TokenTransfer[]): Promise<TokenTransfer[]> {
    if (transfers.length === 0) return [];
    const recipients = [...new Set(transfers.map((t) => t.to))];
    const cutoff = new Date(this.clock.now() - this.matchGraceMs);
    const rows = await this.db
      .selectFrom("watched_addresses")
      .select("address")
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .where("address", "=", sql<string>`any(${sql.val(recipients)}::text[])`)
      .where((eb) => eb.or([eb("watch_until", "is", null), eb("watch_until", ">", cutoff)]))
      .execute();
    if (rows.length === 0) return [];
    const watched = new Set(rows.map((r) => r.address));
    return transfers.filter((t) => watched.has(t.to));
  }

  /**
   * The matched transfers with their blocks' timestamps: one header read per block with a matched
   * transfer (the range's last block is already read), each checked against the transfer's block
   * hash (a block replaced while the range was read fails the range, which is then read again).
   */
  private async withBlockTimes(matched: TokenTransfer[], end: BlockHeader): Promise<TimedTransfer[]> {
    const times = new Map<number, BlockHeader>([[end.number, end]]);
    for (const n of new Set(matched.map((t) => t.blockNumber))) {
      if (times.has(n)) continue;
      const header = await this.adapter.blockHeader(n);
      if (header === null) throw new ChainUnavailableError(this.network, `block ${n} is not available`);
      times.set(n, header);
    }
    return matched.map((t) => {
      const header = times.get(t.blockNumber)!;
      if (header.hash !== t.blockHash) {
        throw new ChainUnavailableError(this.network, `block ${t.blockNumber} changed while it was read`);
      }
      return { ...t, blockTime: header.timestamp };
    });
  }

  /**
   * Stores one scanned range atomically: observations (idempotent), block hashes, the new cursor
   * and the chain time (the timestamp of the range's last block).
   * Returns false (and writes nothing) when this worker no longer holds the lease or the cursor
   * moved under it.
   */
  private async commit(
    from: number,
    to: number,
    end: BlockHeader,
    matched: TimedTransfer[],
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable("chain_cursors")
        .set({
          cursor_block: to,
          chain_time: new Date(end.timestamp),
          lease_until: sql`now() + ${`${this.leaseMs} milliseconds`}::interval`,
          updated_at: sql`now()`,
        })
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("lease_owner", "=", this.options.owner)
        .where("cursor_block", "=", from - 1)
        .returning("cursor_block")
        .executeTakeFirst();
      if (!moved) return false;
      const blocks = new Map<number, string>([[to, end.hash]]);
      if (matched.length > 0) {
        await trx
          .insertInto("chain_observations")
          .values(
            matched.map((t) => ({
              id: newId("obs"),
              network: this.network,
              environment: this.environment,
              address: t.to,
              from_address: t.from,
              tx_hash: t.txHash,
              log_index: t.logIndex,
              block_number: t.blockNumber,
              block_hash: t.blockHash,
              block_time: new Date(t.blockTime),
              amount: t.amount,
            })),
          )
          .onConflict((oc) => oc.columns(["network", "tx_hash", "log_index"]).doNothing())
          .execute();
        for (const t of matched) {
          blocks.set(t.blockNumber, t.blockHash);
          // A transfer that was reorganised away after its hand-off and came back in the new fork:
          // its deposit stands; record where it lives now.
          await trx
            .updateTable("chain_observations")
            .set({
              status: "handed_off",
              block_number: t.blockNumber,
              block_hash: t.blockHash,
              block_time: new Date(t.blockTime),
            })
            .where("network", "=", this.network)
            .where("tx_hash", "=", t.txHash)
            .where("log_index", "=", t.logIndex)
            .where("status", "=", "reorged")
            .execute();
        }
      }
      await trx
        .insertInto("chain_blocks")
        .values(
          [...blocks].map(([number, hash]) => ({
            network: this.network,
            environment: this.environment,
            number,
            hash,
          })),
        )
        .onConflict((oc) =>
          oc.columns(["network", "environment", "number"]).doUpdateSet({ hash: sql`excluded.hash` }),
        )
        .execute();
      await trx
        .deleteFrom("chain_blocks")
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("number", "<", to - this.keepBlocks)
        .execute();
      return true;
    });
  }

  /**
   * Compares the cursor block's kept hash with the chain. Returns the block the cursor was rolled
   * back to, or null when nothing changed.
   */
  private async checkCursorBlock(cursor: number): Promise<number | null> {
    if (cursor < 0) return null;
    const kept = await this.keptHash(cursor);
    // Nothing kept for the cursor block (a chain's first scan starts below its kept hashes).
    if (kept === null) return null;
    const current = await this.adapter.blockHash(cursor);
    if (current === kept) return null;
    return this.rollBack(cursor);
  }

  /**
   * Block `changed` is no longer the one scanned: finds the newest kept block below it that is still
   * on the chain, moves the cursor there and discards what is above.
   */
  private async rollBack(changed: number): Promise<number> {
    const cursor = await this.cursor();
    const kept = await this.db
      .selectFrom("chain_blocks")
      .select(["number", "hash"])
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .where("number", "<", changed)
      .orderBy("number", "desc")
      .execute();
    let fork: number | null = null;
    for (const b of kept) {
      if ((await this.adapter.blockHash(Number(b.number))) === b.hash) {
        fork = Number(b.number);
        break;
      }
    }
    if (fork === null) {
      // Deeper than anything kept: rescan from just below the oldest kept block.
      const oldest = kept.at(-1);
      fork = Math.max(-1, oldest ? Number(oldest.number) - 1 : changed - this.keepBlocks);
      this.log.error({ cursor, rollBackTo: fork }, "reorg deeper than the kept block hashes");
    }
    const target = fork;
    const lost = await this.db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable("chain_cursors")
        // Chain time is unknown until the new fork is scanned again: nothing expires meanwhile.
        .set({ cursor_block: target, chain_time: null, updated_at: sql`now()` })
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("lease_owner", "=", this.options.owner)
        .returning("cursor_block")
        .executeTakeFirst();
      if (!moved) throw new Error("lost the watcher lease during a reorg roll-back");
      await trx
        .deleteFrom("chain_observations")
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("status", "=", "observed")
        .where("block_number", ">", target)
        .execute();
      const reorged = await trx
        .updateTable("chain_observations")
        .set({ status: "reorged" })
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("status", "=", "handed_off")
        .where("block_number", ">", target)
        .returning(["id", "tx_hash"])
        .execute();
      await trx
        .deleteFrom("chain_blocks")
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("number", ">", target)
        .execute();
      return reorged;
    });
    this.log.warn({ from: cursor, to: target }, "reorg detected; cursor rolled back");
    if (lost.length > 0) {
      // Only a reorg deeper than the confirmations can do this; the deposit logic has credited them.
      this.log.error({ observations: lost }, "handed-off transfers were reorganised away");
    }
    return target;
  }

  /**
   * Hands observations with the required confirmations (block <= `safe`) to the registered deposit
   * handler, oldest first, one database transaction each (handler + status change). Returns how
   * many were handed off.
   */
  async handOff(safe: number): Promise<number> {
    const handler = this.options.handoff.handler;
    if (!handler || safe < 0) return 0;
    const now = new Date(this.clock.now());
    const rows = await this.db
      .selectFrom("chain_observations as o")
      .innerJoin("watched_addresses as w", (j) =>
        j
          .onRef("w.network", "=", "o.network")
          .onRef("w.environment", "=", "o.environment")
          .onRef("w.address", "=", "o.address"),
      )
      .select([
        "o.id",
        "o.address",
        "o.from_address",
        "o.tx_hash",
        "o.log_index",
        "o.block_number",
        "o.block_hash",
        "o.amount",
        "o.block_time",
        "o.observed_at",
        "o.attempts",
        "w.merchant_id",
        "w.purpose",
        "w.reference_id",
      ])
      .where("o.network", "=", this.network)
      .where("o.environment", "=", this.environment)
      .where("o.status", "=", "observed")
      .where("o.block_number", "<=", safe)
      .where((eb) => eb.or([eb("o.next_attempt_at", "is", null), eb("o.next_attempt_at", "<=", now)]))
      .orderBy("o.block_number")
      .orderBy("o.log_index")
      .limit(HANDOFF_BATCH)
      .execute();
    if (rows.length === 0) return 0;

    // The blocks must still be on the chain (one call per block with deposits, not per address).
    for (const n of new Set(rows.map((r) => Number(r.block_number)))) {
      const hash = await this.adapter.blockHash(n);
      const expected = rows.find((r) => Number(r.block_number) === n)!.block_hash;
      if (hash !== expected) {
        await this.rollBack(n);
        return 0;
      }
    }

    let handed = 0;
    for (const r of rows) {
      const transfer: ConfirmedTransfer = {
        observationId: r.id,
        network: this.network,
        environment: this.environment,
        address: r.address,
        from: r.from_address,
        txHash: r.tx_hash,
        logIndex: r.log_index,
        blockNumber: Number(r.block_number),
        blockHash: r.block_hash,
        blockTime: r.block_time ?? r.observed_at,
        amount: BigInt(r.amount),
        merchantId: r.merchant_id,
        purpose: r.purpose,
        referenceId: r.reference_id,
      };
      try {
        const done = await this.db.transaction().execute(async (trx) => {
          const claimed = await trx
            .updateTable("chain_observations")
            .set({ status: "handed_off", handed_off_at: new Date(this.clock.now()), last_error: null })
            .set((eb) => ({ attempts: eb("attempts", "+", 1) }))
            .where("id", "=", r.id)
            .where("status", "=", "observed")
            .returning("id")
            .executeTakeFirst();
          if (!claimed) return false; // someone else (a previous owner of the lease) did it
          await handler(trx, transfer);
          return true;
        });
        if (done) handed += 1;
      } catch (err) {
        const attempts = r.attempts + 1;
        const delayMs = Math.min(600_000, 1_000 * 2 ** Math.min(attempts, 20));
        this.log[retriedFailureLevel(err)](
          { err, observation: r.id, attempts },
          "deposit handler failed; will retry",
        );
        await this.db
          .updateTable("chain_observations")
          .set({
            attempts,
            last_error: describe(err).slice(0, 500),
            next_attempt_at: new Date(this.clock.now() + delayMs),
          })
          .where("id", "=", r.id)
          .where("status", "=", "observed")
          .execute();
      }
    }
    return handed;
  }

  private async cursor(): Promise<number> {
    const row = await this.db
      .selectFrom("chain_cursors")
      .select("cursor_block")
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .executeTakeFirstOrThrow();
    return Number(row.cursor_block);
  }

  private async keptHash(n: number): Promise<string | null> {
    const row = await this.db
      .selectFrom("chain_blocks")
      .select("hash")
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .where("number", "=", n)
      .executeTakeFirst();
    return row?.hash ?? null;
  }
}

/** A matched transfer with its block's timestamp (ms). */
type TimedTransfer = TokenTransfer & { blockTime: number };

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message.split("\n")[0]}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}
