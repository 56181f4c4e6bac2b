import {
  type BlockHeader,
  type ChainAdapter,
  ChainTimeError,
  ChainUnavailableError,
  safeBlockFromHead,
  type TokenTransfer,
} from "../chains/index.js";
import { retriedFailureLevel } from "../db/transient.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { type Clock, systemClock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { ConfirmedTransfer } from "./handoff.js";
import { IssuedAddresses } from "./issued.js";
import type { ChainWatcherOptions, ScanResult, TickOutcome } from "./options.js";
import type { TimedTransfer, WatcherScope } from "./store.js";
import * as store from "./store.js";

export type { ChainWatcherOptions, ScanResult, TickOutcome } from "./options.js";

const HANDOFF_BATCH = 200;
/** How much earlier than the oldest watched address a chain's first scan starts (clock differences). */
const FIRST_SCAN_MARGIN_MS = 10 * 60_000;

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
  private readonly store: WatcherScope;
  private readonly adapter: ChainAdapter;
  private readonly clock: Clock;
  private readonly log: Logger;
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
  /** Watched rows are matched only at the gateway's own derivation (`issued.ts`). */
  private readonly issued: IssuedAddresses;

  constructor(readonly options: ChainWatcherOptions) {
    this.network = options.network;
    this.environment = options.environment;
    this.adapter = options.adapter;
    this.clock = options.clock ?? systemClock;
    this.log = options.logger.child({ chain: `${options.network}/${options.environment}` });
    this.issued = new IssuedAddresses(options.derive, this.log);
    this.store = {
      db: options.db,
      network: options.network,
      environment: options.environment,
      owner: options.owner,
      leaseMs: options.leaseMs ?? 20_000,
      clock: this.clock,
    };
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
   * README.md#money-when-a-payment-counts-and-books-that-match). A chain without one is refused for good — logged, shown in `/readyz`, never
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
    await store.recordError(this.store, message);
  }

  /** Takes or renews the scanning lease. Creates the cursor row the first time. */
  async acquireLease(): Promise<boolean> {
    for (let attempt = 0; attempt < 2; attempt++) {
      if (await store.takeLease(this.store)) return true;
      if (await store.cursorExists(this.store)) return false;
      await store.createCursor(this.store, await this.firstCursor());
    }
    return false;
  }

  /**
   * Where a chain never scanned starts: genesis (the simulator), or the current safe block — or
   * earlier when addresses of this chain were handed out before this first scan (the api of `serve`
   * answers before the worker's first tick; in the split layout a network enabled on a running
   * gateway is served by an api restarted before the worker). Then the scan starts at the first
   * block whose time is at or after the oldest watched address's creation, less
   * `FIRST_SCAN_MARGIN_MS` (10 min) for clocks that differ: nothing paid to a handed-out address is missed.
   * The block is found by halving on block headers (about 25 reads on Ethereum, once per chain).
   */
  private async firstCursor(): Promise<number> {
    if (this.options.start === "genesis") return -1;
    const safe = safeBlockFromHead(await this.adapter.headBlock(), this.options.confirmations);
    if (this.options.start === "safe" || safe < 0) return safe;
    // Addresses whose watch ended before the match grace cannot be credited: they do not count.
    const oldest = await store.oldestWatchedAt(this.store, new Date(this.clock.now() - this.matchGraceMs));
    if (oldest === null) return safe;
    const since = oldest.getTime() - FIRST_SCAN_MARGIN_MS;
    const timeOf = async (n: number) => {
      const header = await this.adapter.blockHeader(n);
      if (header === null) throw new ChainUnavailableError(this.network, `block ${n} is not available`);
      return header.timestamp;
    };
    if ((await timeOf(safe)) < since) return safe;
    // The first block at or after `since` is in [0, safe]: the cursor is the block before it.
    let lo = 0;
    let hi = safe;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if ((await timeOf(mid)) >= since) hi = mid;
      else lo = mid + 1;
    }
    this.log.info(
      { from: lo, safe, since: new Date(since).toISOString() },
      "first scan starts at the oldest watched address",
    );
    return lo - 1;
  }

  /**
   * Gives the scanning lease up (graceful stop), so another instance — or this one restarted —
   * takes the chain over at once instead of after the lease's expiry.
   */
  async releaseLease(): Promise<void> {
    await store.releaseLease(this.store);
  }

  /** Scans from the cursor to the head block. The caller holds the lease. */
  async scan(signal?: AbortSignal): Promise<ScanResult> {
    const started = Date.now();
    const head = await this.adapter.headBlock();
    const safe = safeBlockFromHead(head, this.options.confirmations);
    let cursor = await store.readCursor(this.store);
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
      if (!(await store.commitRange(this.store, { from, to, end, matched, keepBlocks: this.keepBlocks })))
        break;
      observed += matched.length;
      scannedBlocks += to - from + 1;
      cursor = to;
      this.range = Math.min(this.options.scan.maxRangeBlocks, this.range * 2);
    }
    await store.recordHead(this.store, head, safe);
    return { head, safe, cursor, scannedBlocks, observed, reorgTo };
  }

  /** Transfers whose recipient is watched: one indexed query per range, whatever the watched set's size. */
  private async match(transfers: TokenTransfer[]): Promise<TokenTransfer[]> {
    if (transfers.length === 0) return [];
    const recipients = [...new Set(transfers.map((t) => t.to))];
    const cutoff = new Date(this.clock.now() - this.matchGraceMs);
    const rows = await store.watchedAmong(this.store, recipients, cutoff);
    if (rows.length === 0) return [];
    const watched = new Set(this.issued.own(rows).map((r) => r.address));
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
   * Compares the cursor block's kept hash with the chain. Returns the block the cursor was rolled
   * back to, or null when nothing changed.
   */
  private async checkCursorBlock(cursor: number): Promise<number | null> {
    if (cursor < 0) return null;
    const kept = await store.keptHash(this.store, cursor);
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
    const cursor = await store.readCursor(this.store);
    const kept = await store.keptBlocksBelow(this.store, changed);
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
    const lost = await store.rollBackTo(this.store, target);
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
    const rows = await store.dueObservations(this.store, safe, now, HANDOFF_BATCH);
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
        wrongNetwork: r.wrong_network,
      };
      try {
        // Outside the hand-off's transaction: the chain's freeze list and the screening provider may
        // be slow, and no database connection or lock waits for them (README.md#frozen-funds).
        const check = this.options.handoff.senderCheck;
        if (check) transfer.holdReason = await check(transfer);
        const done = await store.claimAndHandOff(this.store, r.id, (trx) => handler(trx, transfer));
        if (done) handed += 1;
      } catch (err) {
        const attempts = r.attempts + 1;
        const delayMs = Math.min(600_000, 1_000 * 2 ** Math.min(attempts, 20));
        // A handler's refusal that names an alert (the deposit logic's `alert` field) is one.
        const alert = (err as { alert?: unknown } | null)?.alert;
        if (typeof alert === "string")
          this.log.error({ err, alert, observation: r.id, attempts }, `ALERT: ${describe(err)}`);
        else
          this.log[retriedFailureLevel(err)](
            { err, observation: r.id, attempts },
            "deposit handler failed; will retry",
          );
        await store.recordHandOffFailure(this.store, r.id, {
          attempts,
          error: describe(err),
          nextAttemptAt: new Date(this.clock.now() + delayMs),
        });
      }
    }
    return handed;
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message.split("\n")[0]}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}
