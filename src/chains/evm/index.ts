import { getAddress, hexToBytes, toHex } from "viem";
import { chainScale, currencyOf, type NetworkDefinition } from "../../domain/currency.js";
import type { AddressCodec, NetworkChainModule } from "../module.js";
import { CHAIN_RPC_TIMEOUT_MS } from "../module.js";
import { networkChainEntry } from "../network-entry.js";
import { pooledWriter } from "../pooled-writer.js";
import { evmAddressFromPublicKey, isEvmAddress, normalizeEvmAddress } from "./address.js";
import { type EvmAdapterOptions, EvmChainAdapter } from "./evm-adapter.js";
import { EvmChainWriter } from "./evm-writer.js";

/**
 * The EVM module: `evmChain(definition)` serves any EVM network of the registry (Ethereum, BNB
 * Smart Chain, Polygon, Arbitrum, Base, a test fixture's): JSON-RPC read side (`EvmChainAdapter`),
 * EIP-1559 write side (`EvmChainWriter`), EIP-55 addresses. Each currency type of the network is its
 * own chain entry (its token contract and decimals); they share the network's endpoints.
 */

/** EIP-55 addresses (`0x` + 40 hex digits): the same on every EVM network. */
export const evmAddress: AddressCodec = {
  validate: isEvmAddress,
  normalize: normalizeEvmAddress,
  fromPublicKey: evmAddressFromPublicKey,
  fromAccountBytes: (account) => getAddress(toHex(account)),
  toAccountBytes: (address) => hexToBytes(normalizeEvmAddress(address)),
};

export function evmChain(definition: NetworkDefinition): NetworkChainModule<EvmAdapterOptions> {
  const module: NetworkChainModule<EvmAdapterOptions> = {
    kind: "evm",
    network: definition.network,
    definition,
    address: evmAddress,
    // Log queries over ranges of up to 1,000 blocks (what most providers accept).
    scan: { pollIntervalMs: definition.pollIntervalMs, initialRangeBlocks: 100, maxRangeBlocks: 1_000 },
    endpoint(config, currencyType, environment) {
      const settings = config.chains.networks[definition.network]?.[environment];
      const urls = settings?.urls ?? [];
      return { url: urls[0], urls: [...urls], contract: settings?.contracts[currencyOf(currencyType).token] };
    },
    adapterOptions: (currencyType, { url, contract }, timeoutMs) => ({
      network: currencyType,
      rpcUrl: url,
      tokenAddress: contract,
      scale: chainScale(currencyType),
      timeoutMs,
    }),
    createAdapter: (options) => new EvmChainAdapter(options),
    createAdapterFor(currencyType, { kind: _kind, ...options }) {
      if (currencyOf(currencyType).network !== definition.network)
        throw new Error(`${currencyType} is not a currency type of ${definition.network}.`);
      return new EvmChainAdapter({ scale: chainScale(currencyType), ...options, network: currencyType });
    },
    entry(currencyType, environment, config, context) {
      return networkChainEntry(module, currencyType, environment, config, context);
    },
    createWriter(chain, config) {
      const { url, urls, contract } = module.endpoint(config, chain.network, chain.environment);
      // Every provider (issue #34): sent to all, outcomes, heads and nonces agreed (pooled-writer.ts).
      const writers = (urls.length > 0 ? urls : [url!]).map(
        (rpcUrl) =>
          new EvmChainWriter({
            network: chain.network,
            rpcUrl,
            tokenAddress: contract!,
            scale: chainScale(chain.network),
            timeoutMs: CHAIN_RPC_TIMEOUT_MS,
            // Production signs only for the network's own chain id; sandbox testnets have their own.
            expectedChainId: chain.environment === "production" ? definition.chainId : null,
          }),
      );
      return pooledWriter(chain.adapter, writers);
    },
  };
  return module;
}

export {
  accountBytesFromPublicKey,
  type EvmAddress,
  evmAddressFromPublicKey,
  isEvmAddress,
  normalizeEvmAddress,
} from "./address.js";
export { type EvmAdapterOptions, EvmChainAdapter } from "./evm-adapter.js";
export { EvmChainWriter, type EvmWriterOptions } from "./evm-writer.js";
export {
  batchGas,
  CREATE2_DEPLOYER,
  DEPLOY_GAS_CAP,
  decodeSweepMany,
  delegationCode,
  sweeperAddress,
  sweeperDeployData,
} from "./sweeper.js";
