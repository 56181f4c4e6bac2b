import {
  type BlockHeader,
  type ChainAdapter,
  ChainUnavailableError,
  type TokenTransfer,
} from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { Clock } from "../lib/clock.js";
import { IssuedAddresses } from "./issued.js";
import { recordObservations, type TimedTransfer, type WatcherScope, watchedAmong } from "./store.js";

/**
 * `stablegate chain rescan` (issue #22): re-reads a block range of one chain and stores every
 * transfer to an address stablegate ever watched that is not stored yet, for the watcher's
 * hand-off to credit once it has its confirmations. Idempotent: what the watcher (or an earlier
 * rescan) stored is left alone, and the hand-off credits an observation once, so a second rescan
 * of the same range credits nothing. It does not move the watcher's cursor or take its lease. Like
 * the watcher, it records a transfer only to an address that is the gateway's key at its recorded
 * index (`issued.ts`).
 */

/** The most blocks one rescan reads (a larger range is several commands). */
export const MAX_RESCAN_BLOCKS = 100_000;

export interface RescanTarget {
  network: CurrencyType;
  environment: Environment;
  adapter: ChainAdapter;
  /** Blocks per log query (the chain's `scan.maxRangeBlocks`). */
  rangeBlocks: number;
  /** The gateway's address at a derivation index of this chain (`issued.ts`). */
  derive: (index: number) => string;
}

export interface RescanResult {
  network: CurrencyType;
  environment: Environment;
  fromBlock: number;
  toBlock: number;
  scannedBlocks: number;
  /** Transfers to watched addresses in the range. */
  matched: number;
  /** Of those, the ones no one had stored: handed off once confirmed. */
  recorded: number;
  alreadyKnown: number;
  /**
   * Watched addresses paid in the range that are not the gateway's key at their recorded index
   * (`issued.ts`): never recorded, and worth an investigation.
   */
  forged: string[];
}

export async function rescanRange(
  deps: { db: Db; clock: Clock },
  chain: RescanTarget,
  range: { fromBlock: number; toBlock: number },
): Promise<RescanResult> {
  const { fromBlock, toBlock } = range;
  const fields = [];
  if (!Number.isSafeInteger(fromBlock) || fromBlock < 0)
    fields.push({ field: "from", message: "must be a block number (an integer ≥ 0)" });
  if (!Number.isSafeInteger(toBlock) || toBlock < fromBlock)
    fields.push({ field: "to", message: "must be a block number ≥ from" });
  else if (toBlock - fromBlock + 1 > MAX_RESCAN_BLOCKS)
    fields.push({ field: "to", message: `a rescan reads at most ${MAX_RESCAN_BLOCKS} blocks` });
  if (fields.length > 0) throw AppError.validation(fields);
  const head = await chain.adapter.headBlock();
  if (toBlock > head)
    throw AppError.validation([{ field: "to", message: `is above the chain's head block ${head}` }]);

  const scope: WatcherScope = {
    db: deps.db,
    network: chain.network,
    environment: chain.environment,
    owner: "rescan",
    leaseMs: 0,
    clock: deps.clock,
  };
  let matched = 0;
  let recorded = 0;
  const forged: string[] = [];
  const issued = new IssuedAddresses(chain.derive, {
    error: (fields: { address?: string }) => {
      if (fields.address) forged.push(fields.address);
    },
  });
  for (let from = fromBlock; from <= toBlock; from += chain.rangeBlocks) {
    const to = Math.min(toBlock, from + chain.rangeBlocks - 1);
    const transfers = await chain.adapter.tokenTransfers({ fromBlock: from, toBlock: to });
    if (transfers.length === 0) continue;
    // Any address ever watched: a rescan looks for what was missed, late payments included.
    const rows = await watchedAmong(scope, [...new Set(transfers.map((t) => t.to))], new Date(0));
    const watched = new Set(issued.own(rows).map((r) => r.address));
    const mine = transfers.filter((t) => watched.has(t.to));
    matched += mine.length;
    recorded += await recordObservations(scope, await withBlockTimes(chain, mine));
  }
  return {
    network: chain.network,
    environment: chain.environment,
    fromBlock,
    toBlock,
    scannedBlocks: toBlock - fromBlock + 1,
    matched,
    recorded,
    alreadyKnown: matched - recorded,
    forged,
  };
}

/** Each transfer with its block's timestamp, the block checked against the transfer's hash. */
async function withBlockTimes(chain: RescanTarget, transfers: TokenTransfer[]): Promise<TimedTransfer[]> {
  const headers = new Map<number, BlockHeader>();
  for (const n of new Set(transfers.map((t) => t.blockNumber))) {
    const header = await chain.adapter.blockHeader(n);
    if (header === null) throw new ChainUnavailableError(chain.network, `block ${n} is not available`);
    headers.set(n, header);
  }
  return transfers.map((t) => {
    const header = headers.get(t.blockNumber)!;
    if (header.hash !== t.blockHash)
      throw new ChainUnavailableError(chain.network, `block ${t.blockNumber} changed while it was read`);
    return { ...t, blockTime: header.timestamp };
  });
}
