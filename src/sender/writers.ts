import { EvmChainWriter } from "../chains/evm/evm-writer.js";
import type { AvailableChain } from "../chains/registry.js";
import { CHAIN_RPC_TIMEOUT_MS } from "../chains/registry.js";
import { SimulatorChainWriter } from "../chains/simulator/simulator-writer.js";
import { TronChainWriter } from "../chains/tron/tron-writer.js";
import type { ChainWriter } from "../chains/writer.js";
import type { Config } from "../config/config.js";

/** The write side of an available chain, from the same configuration as its read side. */
export function createChainWriter(
  chain: AvailableChain,
  config: Pick<Config, "chains" | "sending">,
  hotWallet: string,
): ChainWriter {
  if (chain.kind === "simulator") {
    if (!chain.simulator) throw new Error("simulator chain without a simulator");
    return new SimulatorChainWriter(chain.simulator, { hotWallet });
  }
  const endpoints = config.chains[chain.environment];
  if (chain.kind === "evm") {
    return new EvmChainWriter({
      rpcUrl: endpoints.erc20RpcUrl!,
      tokenAddress: endpoints.usdtErc20Contract!,
      timeoutMs: CHAIN_RPC_TIMEOUT_MS,
    });
  }
  return new TronChainWriter({
    apiUrl: endpoints.trc20ApiUrl!,
    tokenAddress: endpoints.usdtTrc20Contract!,
    timeoutMs: CHAIN_RPC_TIMEOUT_MS,
    feeLimitSun: config.sending.tronFeeLimitSun,
  });
}
