import type { CheckoutSessionRecord, SessionDetection } from "../domain/checkout.js";
import type { TransactionStatus } from "../domain/transaction.js";

/** What the hosted page shows live about a session. */
export interface LiveSnapshot {
  status: TransactionStatus;
  amount: bigint;
  /** Received so far (0 when nothing arrived). */
  actualBalance: bigint;
  confirmedAt: Date | null;
  blockchainTxHash: string | null;
  /** Seen on the chain in time, confirmed or still confirming (docs/api-reference.md#schema-checkoutsession `detectedAmount`). */
  detectedAmount: bigint;
  /** Of the least-confirmed transfer counted. */
  confirmations: { current: number; required: number };
}

export function snapshotOf(s: CheckoutSessionRecord, detection: SessionDetection): LiveSnapshot {
  const t = s.transaction;
  return {
    status: t.status,
    amount: t.amount,
    actualBalance: t.actualBalance ?? 0n,
    confirmedAt: t.confirmedAt,
    blockchainTxHash: t.blockchainTxHash,
    detectedAmount: detection.detectedAmount,
    confirmations: { ...detection.confirmations },
  };
}

/** What the customer has sent as far as the chain shows: confirmed or still confirming. */
export function seenAmount(s: LiveSnapshot): bigint {
  if (s.detectedAmount > s.actualBalance) return s.detectedAmount;
  return s.actualBalance;
}

/** Whether a transfer counted for the session is still waiting for its confirmations. */
export function isConfirming(s: LiveSnapshot): boolean {
  return s.status === "pending" && s.detectedAmount > s.actualBalance;
}

export function sameSnapshot(a: LiveSnapshot, b: LiveSnapshot): boolean {
  return (
    a.status === b.status &&
    a.actualBalance === b.actualBalance &&
    a.detectedAmount === b.detectedAmount &&
    a.confirmations.current === b.confirmations.current &&
    a.blockchainTxHash === b.blockchainTxHash &&
    (a.confirmedAt?.getTime() ?? null) === (b.confirmedAt?.getTime() ?? null)
  );
}

/** `confirmed` and `failed` never change again: the stream can end. */
export function isFinal(s: LiveSnapshot): boolean {
  return s.status !== "pending";
}

/** One open live-status connection. */
export interface LiveSubscriber {
  sessionId: string;
  /** The session changed (called once per change, in order). */
  onChange(snapshot: LiveSnapshot): void;
  /** Keep-alive: at most one every `heartbeatMs`. */
  onHeartbeat(): void;
  /** False once the connection must end although the client is still there (its server stopped listening). */
  alive(): boolean;
  /** The hub ends the subscription (shutdown, or `alive()` turned false). Not called after unsubscribing. */
  onEnd(): void;
}

export interface LiveStatusOptions {
  /** Reads every watched session in one query (`findCheckoutSessionsByIds`) and what the chain shows of them in another. */
  load(ids: readonly string[]): Promise<Map<string, LiveSnapshot>>;
  /** Interval between two reads while anything is watched (default 1 s). */
  intervalMs?: number;
  heartbeatMs?: number;
  /**
   * A connection ends after this long (default 30 min): the browser's EventSource reconnects after
   * the `retry:` delay and gets the current status first, so nothing is lost, and no connection is
   * held for ever by a page left open.
   */
  maxLifetimeMs?: number;
  now?: () => number;
  onError?(err: unknown): void;
}

interface Entry {
  subscriber: LiveSubscriber;
  last: LiveSnapshot;
  /** When it subscribed (`now()`). */
  since: number;
}

/** Default `maxLifetimeMs`. */
export const LIVE_MAX_LIFETIME_MS = 30 * 60_000;

/**
 * The live-status poller of one process: however many hosted pages are open, it reads all their
 * sessions with one query per interval and fans changes out to the connections. The timer runs only
 * while something is subscribed; `close()` ends every connection (graceful shutdown); a connection
 * older than `maxLifetimeMs` is ended at the next read (issue #34: every long-lived connection has
 * a maximum lifetime; this one is public and carries no credential, so there is nothing to
 * re-authorise).
 */
export class LiveStatusHub {
  private readonly entries = new Set<Entry>();
  private readonly intervalMs: number;
  private readonly heartbeatMs: number;
  private readonly maxLifetimeMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private lastHeartbeat: number;
  private closed = false;
  /** Number of reads so far (observability and tests). */
  reads = 0;

  constructor(private readonly options: LiveStatusOptions) {
    this.intervalMs = options.intervalMs ?? 1_000;
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
    this.maxLifetimeMs = options.maxLifetimeMs ?? LIVE_MAX_LIFETIME_MS;
    this.now = options.now ?? Date.now;
    this.lastHeartbeat = this.now();
  }

  /** Watches a session from `initial` (what the connection has already sent). Returns the unsubscribe. */
  subscribe(subscriber: LiveSubscriber, initial: LiveSnapshot): () => void {
    if (this.closed) {
      subscriber.onEnd();
      return () => {};
    }
    const entry: Entry = { subscriber, last: initial, since: this.now() };
    this.entries.add(entry);
    this.schedule();
    return () => {
      this.entries.delete(entry);
      if (this.entries.size === 0) this.stopTimer();
    };
  }

  /** Connections open now. */
  get size(): number {
    return this.entries.size;
  }

  /** Distinct sessions watched now. */
  watchedIds(): string[] {
    return [...new Set([...this.entries].map((e) => e.subscriber.sessionId))];
  }

  /** Whether the interval timer is running (it stops when nothing is watched). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** One read and fan-out now (the timer calls it; concurrent calls share one read). */
  pollNow(): Promise<void> {
    this.polling ??= this.poll().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  /** Ends every connection and stops polling; later subscriptions end at once. */
  close(): void {
    this.closed = true;
    this.stopTimer();
    const all = [...this.entries];
    this.entries.clear();
    for (const e of all) this.safely(() => e.subscriber.onEnd());
  }

  private async poll(): Promise<void> {
    const started = this.now();
    for (const e of [...this.entries]) {
      if (!e.subscriber.alive() || started - e.since >= this.maxLifetimeMs) {
        this.entries.delete(e);
        this.safely(() => e.subscriber.onEnd());
      }
    }
    const ids = this.watchedIds();
    if (ids.length === 0) {
      this.stopTimer();
      return;
    }
    let fresh: Map<string, LiveSnapshot>;
    try {
      this.reads++;
      fresh = await this.options.load(ids);
    } catch (err) {
      this.options.onError?.(err); // a failed read is retried at the next interval
      return;
    }
    for (const e of [...this.entries]) {
      const s = fresh.get(e.subscriber.sessionId);
      if (!s || sameSnapshot(s, e.last)) continue;
      e.last = s;
      this.safely(() => e.subscriber.onChange(s));
    }
    const now = this.now();
    if (now - this.lastHeartbeat >= this.heartbeatMs) {
      this.lastHeartbeat = now;
      for (const e of [...this.entries]) this.safely(() => e.subscriber.onHeartbeat());
    }
  }

  private schedule(): void {
    if (this.timer || this.closed || this.entries.size === 0) return;
    const timer = setTimeout(() => {
      this.pollNow().finally(() => {
        if (this.timer !== timer) return; // stopped (and maybe restarted) meanwhile
        this.timer = undefined;
        this.schedule();
      });
    }, this.intervalMs);
    timer.unref();
    this.timer = timer;
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.options.onError?.(err);
    }
  }
}
