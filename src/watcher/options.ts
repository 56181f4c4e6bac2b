import type { ChainAdapter, ScanSettings } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { DepositHandoff } from "./handoff.js";

/** The settings of one chain's watcher and what its steps report. */

export interface ChainWatcherOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  adapter: ChainAdapter;
  confirmations: number;
  scan: ScanSettings;
  handoff: DepositHandoff;
  /**
   * The address the gateway derives at a derivation index of this chain (watch-only keys). A
   * `watched_addresses` row is matched only when its address is this derivation at its recorded
   * index: a row written by anyone else (the api's database role can insert rows) never credits a
   * payment to an address whose key the gateway does not hold.
   */
  derive: (index: number) => string;
  logger: Logger;
  /** Lease owner id: the worker instance. Only the lease holder scans a (network, environment). */
  owner: string;
  clock?: Clock;
  /** Lease lifetime; renewed by every committed step. Default 20 s. */
  leaseMs?: number;
  /**
   * Where a chain that was never scanned starts: "genesis" (block 0; the simulator), "safe" (the
   * safe block at the first run) or "watched" (the safe block, or earlier when addresses were
   * handed out before the first scan: from the oldest watched address's time). Default "watched".
   */
  start?: "genesis" | "safe" | "watched";
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
