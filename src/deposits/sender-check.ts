import type { ChainRegistry } from "../chains/index.js";
import { addressBlock, describeBlock, type Screening } from "../screening/index.js";
import type { SenderCheck } from "../watcher/index.js";

/**
 * The sender check the deposit module registers on the hand-off (README.md#frozen-funds), asked
 * before each hand-off's transaction: a transfer whose sender the token's
 * issuer froze, or the screening provider refuses, is `held`. Read from the transfer's own chain;
 * a chain that is not available throws, so the transfer is offered again later (never credited on
 * a check that did not happen).
 */
export function depositSenderCheck(chains: Pick<ChainRegistry, "entry">, screening: Screening): SenderCheck {
  return async (transfer) => {
    const chain = chains.entry(transfer.network, transfer.environment);
    if (chain.status !== "available")
      throw new Error(`${transfer.network} ${transfer.environment} is not available: ${chain.reason}`);
    const block = await addressBlock(chain.adapter, screening, {
      address: transfer.from,
      network: transfer.network,
      direction: "incoming",
      subject: {
        environment: transfer.environment,
        depositAddress: transfer.address,
        txHash: transfer.txHash,
      },
    });
    return block ? describeBlock(block) : null;
  };
}
