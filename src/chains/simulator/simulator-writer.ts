import type { Db } from "../../db/database.js";
import { normalizeAddress } from "../address.js";
import type { DatabaseChainWriter, ExpectedTransfer, TransferCheck, TransferSpec } from "../writer.js";
import type { SimulatedChain } from "./simulated-chain.js";

export interface SimulatorWriterOptions {
  /**
   * The sandbox hot wallet. When it lacks the amount of a transfer, the faucet pays it the
   * shortfall first (in the same transaction), so sandbox withdrawals and payouts always have funds.
   */
  hotWallet: string;
}

/**
 * Write side of the database-backed sandbox chain. There are no keys: the transfer is mined by
 * `SimulatedChain.transfer` inside the caller's transaction (the one that records it), so a
 * crash leaves either both or neither. A transfer to the network's test failure address is mined
 * as a failed transaction and `check` reports it failed, as on a real chain.
 */
export class SimulatorChainWriter implements DatabaseChainWriter {
  readonly kind = "database" as const;
  readonly network;
  private readonly hotWallet: string;

  constructor(
    readonly chain: SimulatedChain,
    options: SimulatorWriterOptions,
  ) {
    this.network = chain.network;
    this.hotWallet = normalizeAddress(chain.network, options.hotWallet);
  }

  tokenBalance(address: string, trx?: Db): Promise<bigint> {
    return this.chain.balanceOf(address, trx);
  }

  async execute(trx: Db, spec: TransferSpec): Promise<{ hash: string }> {
    if (spec.asset !== "token") throw new Error("the simulator has no native coin (no gas)");
    const from = normalizeAddress(this.network, spec.from);
    // The hot wallet's shortfall is read and paid under the chain lock the transfer takes: read
    // before it, another worker's transfer committing in between would make this one fail.
    const tx = await this.chain.transfer(from, spec.to, spec.amount, {
      trx,
      fundShortfall: from === this.hotWallet,
    });
    return { hash: tx.txHash };
  }

  async check(hash: string, expected: ExpectedTransfer): Promise<TransferCheck> {
    const tx = await this.chain.transaction(hash);
    if (!tx) return { state: "missing" };
    const head = await this.chain.head();
    const confirmations = Math.max(0, head - tx.blockNumber + 1);
    const failed = (reason: string): TransferCheck => ({
      state: "failed",
      blockNumber: tx.blockNumber,
      confirmations,
      reason,
    });
    if (tx.status !== "success") return failed(tx.failureReason ?? "failed on-chain");
    if (expected.asset !== "token") return failed("not a token transfer");
    if (
      tx.from !== normalizeAddress(this.network, expected.from) ||
      tx.to !== normalizeAddress(this.network, expected.to) ||
      tx.amount !== expected.amount
    )
      return failed("no Transfer with the expected recipient and amount");
    return { state: "success", blockNumber: tx.blockNumber, confirmations };
  }
}
