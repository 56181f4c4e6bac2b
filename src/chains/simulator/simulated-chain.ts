import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { TokenTransfer } from "../adapter.js";
import { normalizeAddress } from "../address.js";
import { type Network, TEST_FAILURE_ADDRESSES } from "../network.js";
import { tronAddressFromBytes } from "../tron/address.js";

export type SimTransactionStatus = "success" | "failed";

/** A token transfer transaction of the simulated chain, successful or failed on-chain. */
export interface SimTransaction {
  txHash: string;
  blockNumber: number;
  blockHash: string;
  from: string;
  to: string;
  amount: bigint;
  status: SimTransactionStatus;
  /** Why it failed (`test failure address`, `insufficient balance`), for the later write side. */
  failureReason?: string;
}

export interface SimBlock {
  number: number;
  hash: string;
  parentHash: string;
  /** Milliseconds since the epoch, from the injected clock. */
  timestamp: number;
  transactions: SimTransaction[];
  /** Transfer events of the block's successful transactions, in log order. */
  transfers: TokenTransfer[];
}

export interface SimulatedChainOptions {
  network: Network;
  /** Clock for block timestamps (deterministic tests inject one). Default `Date.now`. */
  now?: () => number;
}

/**
 * An in-process, deterministic USDT chain for the sandbox (CONTRACT §1): a block is mined per
 * transaction (or on demand with `mine`), hashes are derived from the content, nothing is random.
 *
 * - `pay(to, amount)` is what the sandbox pay endpoints call: the faucet (an address with unlimited
 *   funds, not debited) sends `amount` to `to`.
 * - `transfer(from, to, amount)` moves tracked balances; a transfer to the network's test failure
 *   address, or beyond the sender's balance, is included in a block as a FAILED transaction: no
 *   Transfer event, no balance change (what the later write side must detect on-chain).
 * - `reorg(depth)` replaces the last blocks by a longer fork, for testing reorg handling.
 *
 * State lives in memory: a restart starts a new chain at block 0.
 */
export class SimulatedChain {
  readonly network: Network;
  readonly faucetAddress: string;
  private readonly now: () => number;
  private readonly blocks: SimBlock[] = [];
  private readonly balances = new Map<string, bigint>();
  private readonly transactions = new Map<string, SimTransaction>();
  private readonly failureAddress: string;
  private nonce = 0;
  private fork = 0;

  constructor(options: SimulatedChainOptions) {
    this.network = options.network;
    this.now = options.now ?? Date.now;
    this.failureAddress = normalizeAddress(this.network, TEST_FAILURE_ADDRESSES[this.network]);
    const faucet = sha256(utf8ToBytes("stablegate simulator faucet")).slice(0, 20);
    this.faucetAddress =
      this.network === "USDT-TRC20"
        ? tronAddressFromBytes(faucet)
        : normalizeAddress(this.network, `0x${bytesToHex(faucet)}`);
    this.seal([]);
  }

  get head(): number {
    return this.blocks.length - 1;
  }

  block(n: number): SimBlock | undefined {
    return this.blocks[n];
  }

  balanceOf(address: string): bigint {
    return this.balances.get(normalizeAddress(this.network, address)) ?? 0n;
  }

  transaction(txHash: string): SimTransaction | undefined {
    const tx = this.transactions.get(txHash);
    return tx ? { ...tx } : undefined;
  }

  isTestFailureAddress(address: string): boolean {
    return normalizeAddress(this.network, address) === this.failureAddress;
  }

  /** Mines `count` empty blocks; returns the new head. */
  mine(count = 1): number {
    for (let i = 0; i < count; i++) this.seal([]);
    return this.head;
  }

  /** The faucet pays `to` in a new block (sandbox "pay" endpoints). */
  pay(to: string, amount: bigint): SimTransaction {
    return this.execute(this.faucetAddress, to, amount);
  }

  /** A token transfer from a tracked balance, in a new block. */
  transfer(from: string, to: string, amount: bigint): SimTransaction {
    return this.execute(normalizeAddress(this.network, from), to, amount);
  }

  /**
   * Drops the last `depth` blocks (their transactions vanish and balances revert) and mines
   * `depth + 1` empty blocks in their place, so the new fork is longer and every replaced height
   * gets a new hash. Returns the dropped transactions.
   */
  reorg(depth: number): SimTransaction[] {
    if (!Number.isInteger(depth) || depth < 1 || depth > this.head)
      throw new RangeError("Invalid reorg depth.");
    const dropped: SimTransaction[] = [];
    for (let i = 0; i < depth; i++) {
      const block = this.blocks.pop()!;
      for (const tx of block.transactions.reverse()) {
        this.transactions.delete(tx.txHash);
        if (tx.status === "success") this.apply(tx.to, tx.from, tx.amount);
        dropped.push(tx);
      }
    }
    this.fork += 1;
    this.mine(depth + 1);
    return dropped.reverse();
  }

  private execute(from: string, toInput: string, amount: bigint): SimTransaction {
    if (amount <= 0n) throw new RangeError("Amount must be positive base units.");
    const to = normalizeAddress(this.network, toInput);
    this.nonce += 1;
    const txHash = this.hash(`tx|${this.nonce}|${from}|${to}|${amount}`);
    let failureReason: string | undefined;
    if (to === this.failureAddress) failureReason = "test failure address";
    else if (from !== this.faucetAddress && (this.balances.get(from) ?? 0n) < amount) {
      failureReason = "insufficient balance";
    }
    const tx: SimTransaction = {
      txHash,
      blockNumber: this.head + 1,
      blockHash: "",
      from,
      to,
      amount,
      status: failureReason ? "failed" : "success",
      ...(failureReason ? { failureReason } : {}),
    };
    if (!failureReason) {
      if (from !== this.faucetAddress) this.apply(from, to, amount);
      else this.balances.set(to, (this.balances.get(to) ?? 0n) + amount);
    }
    this.seal([tx]);
    this.transactions.set(txHash, tx);
    return { ...tx };
  }

  private apply(from: string, to: string, amount: bigint): void {
    if (from !== this.faucetAddress) this.balances.set(from, (this.balances.get(from) ?? 0n) - amount);
    if (to !== this.faucetAddress) this.balances.set(to, (this.balances.get(to) ?? 0n) + amount);
  }

  private seal(transactions: SimTransaction[]): SimBlock {
    const number = this.blocks.length;
    const parentHash = this.blocks[number - 1]?.hash ?? this.hash("genesis");
    const hash = this.hash(
      `block|${this.fork}|${number}|${parentHash}|${transactions.map((t) => t.txHash).join(",")}`,
    );
    const transfers: TokenTransfer[] = [];
    for (const tx of transactions) {
      tx.blockHash = hash;
      if (tx.status !== "success") continue;
      transfers.push({
        txHash: tx.txHash,
        logIndex: transfers.length,
        blockNumber: number,
        blockHash: hash,
        from: tx.from,
        to: tx.to,
        amount: tx.amount,
      });
    }
    const block: SimBlock = { number, hash, parentHash, timestamp: this.now(), transactions, transfers };
    this.blocks.push(block);
    return block;
  }

  /** 32-byte content hash in the network's spelling: `0x…` on Ethereum, bare hex on TRON. */
  private hash(content: string): string {
    const hex = bytesToHex(sha256(utf8ToBytes(`${this.network}|${content}`)));
    return this.network === "USDT-ERC20" ? `0x${hex}` : hex;
  }
}
