import {
  blockChunks,
  type ChainAdapter,
  safeBlockFromHead,
  type TokenTransfer,
  type TokenTransferQuery,
} from "../adapter.js";
import { normalizeAddress, validateAddress } from "../address.js";
import type { Network } from "../network.js";
import type { SimulatedChain } from "./simulated-chain.js";

/** `ChainAdapter` over an in-process `SimulatedChain` (the sandbox default). */
export class SimulatorChainAdapter implements ChainAdapter {
  readonly network: Network;

  constructor(readonly chain: SimulatedChain) {
    this.network = chain.network;
  }

  validateAddress(s: string): boolean {
    return validateAddress(this.network, s);
  }

  normalizeAddress(s: string): string {
    return normalizeAddress(this.network, s);
  }

  async headBlock(): Promise<number> {
    return this.chain.head;
  }

  async safeBlock(confirmations: number): Promise<number> {
    return safeBlockFromHead(this.chain.head, confirmations);
  }

  async blockHash(n: number): Promise<string | null> {
    return this.chain.block(n)?.hash ?? null;
  }

  async tokenBalance(address: string): Promise<bigint> {
    return this.chain.balanceOf(address);
  }

  async tokenTransfers(query: TokenTransferQuery): Promise<TokenTransfer[]> {
    const watched = query.addresses
      ? new Set([...query.addresses].map((a) => this.normalizeAddress(a)))
      : null;
    const out: TokenTransfer[] = [];
    for (const [from, to] of blockChunks(query.fromBlock, Math.min(query.toBlock, this.chain.head), 1000)) {
      for (let n = from; n <= to; n++) {
        for (const t of this.chain.block(n)?.transfers ?? []) {
          if (!watched || watched.has(t.to)) out.push({ ...t });
        }
      }
    }
    return out;
  }
}
