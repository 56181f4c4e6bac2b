import type { CurrencyType } from "../../domain/currency.js";
import {
  type BlockHeader,
  type ChainAdapter,
  type NamedFreezeEvent,
  safeBlockFromHead,
  type TokenTransfer,
  type TokenTransferQuery,
  usableBlockTime,
} from "../adapter.js";
import { normalizeAddress, validateAddress } from "../address.js";
import type { SimulatedChain } from "./simulated-chain.js";

/** `ChainAdapter` over the database-backed `SimulatedChain` (the sandbox default). */
export class SimulatorChainAdapter implements ChainAdapter {
  readonly network: CurrencyType;

  constructor(readonly chain: SimulatedChain) {
    this.network = chain.network;
  }

  validateAddress(s: string): boolean {
    return validateAddress(this.network, s);
  }

  normalizeAddress(s: string): string {
    return normalizeAddress(this.network, s);
  }

  headBlock(): Promise<number> {
    return this.chain.head();
  }

  async safeBlock(confirmations: number): Promise<number> {
    return safeBlockFromHead(await this.chain.head(), confirmations);
  }

  async blockHash(n: number): Promise<string | null> {
    return (await this.chain.block(n))?.hash ?? null;
  }

  async blockHeader(n: number): Promise<BlockHeader | null> {
    const block = await this.chain.block(n);
    if (!block) return null;
    return { number: n, hash: block.hash, timestamp: usableBlockTime(this.network, n, block.timestamp) };
  }

  tokenBalance(address: string): Promise<bigint> {
    return this.chain.balanceOf(address);
  }

  isFrozen(address: string): Promise<boolean> {
    return Promise.resolve(this.chain.isFrozen(address));
  }

  /** The simulator's frozen test addresses are fixed (docs/merchants/sandbox.md#test-frozen-addresses): nothing is ever frozen later. */
  freezeEvents(_range: { fromBlock: number; toBlock: number }): Promise<NamedFreezeEvent[]> {
    return Promise.resolve([]);
  }

  async tokenTransfers(query: TokenTransferQuery): Promise<TokenTransfer[]> {
    if (
      !Number.isSafeInteger(query.fromBlock) ||
      !Number.isSafeInteger(query.toBlock) ||
      query.fromBlock < 0
    ) {
      throw new RangeError(`Invalid block range ${query.fromBlock}..${query.toBlock}.`);
    }
    const watched = query.addresses
      ? new Set([...query.addresses].map((a) => this.normalizeAddress(a)))
      : null;
    // One query per range whatever the number of watched addresses; filtered in memory.
    const all = await this.chain.transfers(query.fromBlock, query.toBlock);
    return watched ? all.filter((t) => watched.has(t.to)) : all;
  }
}
