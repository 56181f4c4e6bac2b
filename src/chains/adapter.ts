import type { CurrencyType } from "../domain/currency.js";
import { ChainTimeError } from "./errors.js";
import type { FreezeEvent } from "./freeze-events.js";

/** A freeze event with its address spelled as the network does. */
export type NamedFreezeEvent = Omit<FreezeEvent, "account"> & { address: string };

/**
 * One `Transfer(from, to, value)` event of the network's USDT contract.
 * Addresses are in the network's canonical spelling (`normalizeAddress`); `amount` is base units.
 * (`txHash`, `logIndex`) identifies the transfer; `blockHash` lets a watcher detect a reorg.
 */
export interface TokenTransfer {
  txHash: string;
  /** Position of the log in its block (EVM `logIndex`; TRON: running index over the block's logs). */
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  from: string;
  to: string;
  /** API base units (6 decimals), truncated when the token is finer. */
  amount: bigint;
  /**
   * What the truncation left out, in the token's on-chain base units (18-decimal tokens only;
   * absent when zero): stays on the receiving address, reported as dust, never credited.
   */
  dust?: bigint;
}

/** A block as the watcher needs it: its hash (reorg detection) and its timestamp (on-time decisions). */
export interface BlockHeader {
  number: number;
  hash: string;
  /**
   * The block's own timestamp in milliseconds since the epoch, as the chain records it (never the
   * reader's clock). Non-decreasing along a chain, so no later block can carry an earlier time.
   */
  timestamp: number;
}

export interface TokenTransferQuery {
  /** Inclusive range. The adapter splits long ranges into the chunks its endpoint accepts. */
  fromBlock: number;
  toBlock: number;
  /**
   * Only transfers whose `to` is one of these (any spelling the network accepts). Absent: all
   * transfers of the token. Filtering never multiplies the number of chain queries.
   */
  addresses?: Iterable<string>;
}

/**
 * Read side of a chain, as a deposit watcher needs it. Block numbers are plain integers (they stay far
 * below 2^53); money is always `bigint` base units of the API (6 decimals, whatever the token's
 * on-chain decimals: the adapter of a finer token converts, `chainScale`).
 *
 * Failures of the endpoint surface as `ChainUnavailableError` (retryable); invalid addresses as
 * `InvalidAddressError`.
 *
 * The write side (build for the signer, broadcast, verify on-chain, native top-ups) is the separate
 * `ChainWriter` interface in `writer.ts` (chains part 2).
 */
export interface ChainAdapter {
  readonly network: CurrencyType;

  /** Number of the latest block the endpoint knows. */
  headBlock(): Promise<number>;

  /**
   * The newest block with at least `confirmations` confirmations: `head - confirmations + 1`
   * (a block's own inclusion counts as the first). -1 when no block is that deep yet.
   */
  safeBlock(confirmations: number): Promise<number>;

  /**
   * Token transfers in `[fromBlock, toBlock]`, ordered by (blockNumber, logIndex). One log query
   * per block range (EVM) or per block (TRON) whatever the number of watched addresses.
   * Transfers of failed transactions are never returned.
   */
  tokenTransfers(query: TokenTransferQuery): Promise<TokenTransfer[]>;

  /** Token balance of the address at the head block, in base units. */
  tokenBalance(address: string): Promise<bigint>;

  /**
   * Whether the token's issuer has frozen `address` (its blacklist; `FreezeKind` in the registry) at
   * the head block: a frozen sender can never move what it holds, and a legacy-Tether transfer TO a
   * frozen address succeeds and is lost. False for a token without a freeze function.
   * `ChainUnavailableError` when it cannot be read (never guessed).
   */
  isFrozen(address: string): Promise<boolean>;

  /**
   * The token issuer's freeze events in `[fromBlock, toBlock]` (frozen, released, destroyed: see
   * `freeze-events.ts`), each naming the address in the network's canonical spelling. A trigger to
   * look again (`isFrozen`, `tokenBalance`), never the answer itself. Empty for a token without a
   * freeze function.
   */
  freezeEvents(range: { fromBlock: number; toBlock: number }): Promise<NamedFreezeEvent[]>;

  /** Hash of block `n`, or null when the chain has no such block (yet). */
  blockHash(n: number): Promise<string | null>;

  /**
   * Hash and timestamp of block `n`, or null when the chain has no such block (yet). A block whose
   * timestamp is missing or not a positive whole number of seconds/milliseconds throws
   * `ChainTimeError`: chain time is never guessed.
   */
  blockHeader(n: number): Promise<BlockHeader | null>;

  validateAddress(s: string): boolean;
  /** Canonical spelling; throws `InvalidAddressError`. */
  normalizeAddress(s: string): string;
}

/**
 * Checks a block timestamp read from a chain (milliseconds since the epoch) and returns it; throws
 * `ChainTimeError` when it is not usable (missing, not a whole number, zero or negative — zero is
 * allowed for a genesis block, as TRON's and the simulator's carry — or beyond year 9999): a chain
 * whose blocks carry no usable time cannot decide whether a payment was on time.
 */
export function usableBlockTime(network: CurrencyType, n: number, timestampMs: unknown): number {
  if (
    typeof timestampMs !== "number" ||
    !Number.isSafeInteger(timestampMs) ||
    timestampMs < (n === 0 ? 0 : 1) ||
    timestampMs > 253_402_300_799_000
  ) {
    throw new ChainTimeError(network, `block ${n} carries no usable timestamp (${String(timestampMs)})`);
  }
  return timestampMs;
}

/** `head - confirmations + 1`, shared by the implementations. */
export function safeBlockFromHead(head: number, confirmations: number): number {
  if (!Number.isSafeInteger(confirmations) || confirmations < 1) {
    throw new RangeError(`confirmations must be a positive integer, got ${confirmations}.`);
  }
  return Math.max(-1, head - confirmations + 1);
}

/** Checks a query range and yields `[from, to]` chunks of at most `maxBlocks` blocks. */
export function* blockChunks(
  fromBlock: number,
  toBlock: number,
  maxBlocks: number,
): Generator<[number, number]> {
  if (!Number.isSafeInteger(fromBlock) || !Number.isSafeInteger(toBlock) || fromBlock < 0) {
    throw new RangeError(`Invalid block range ${fromBlock}..${toBlock}.`);
  }
  for (let start = fromBlock; start <= toBlock; start += maxBlocks) {
    yield [start, Math.min(toBlock, start + maxBlocks - 1)];
  }
}

/** Stable order of transfers: by block, then by position in the block. */
export function compareTransfers(a: TokenTransfer, b: TokenTransfer): number {
  return a.blockNumber - b.blockNumber || a.logIndex - b.logIndex;
}
