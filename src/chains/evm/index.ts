import { getAddress, toHex } from "viem";
import type { AddressCodec, NetworkChainModule } from "../module.js";
import { CHAIN_RPC_TIMEOUT_MS } from "../module.js";
import { networkChainEntry } from "../network-entry.js";
import { pooledWriter } from "../pooled-writer.js";
import { evmAddressFromPublicKey, isEvmAddress, normalizeEvmAddress } from "./address.js";
import { EVM_DEFINITION } from "./definition.js";
import { type EvmAdapterOptions, EvmChainAdapter } from "./evm-adapter.js";
import { EvmChainWriter } from "./evm-writer.js";

/**
 * The Ethereum module (USDT-ERC20): JSON-RPC read side (`EvmChainAdapter`), EIP-1559 write side
 * (`EvmChainWriter`), EIP-55 addresses.
 */

/** EIP-55 addresses (`0x` + 40 hex digits). */
export const evmAddress: AddressCodec = {
  validate: isEvmAddress,
  normalize: normalizeEvmAddress,
  fromPublicKey: evmAddressFromPublicKey,
  fromAccountBytes: (account) => getAddress(toHex(account)),
};

export const evmChain: NetworkChainModule<EvmAdapterOptions> = {
  kind: EVM_DEFINITION.kind,
  network: EVM_DEFINITION.network,
  definition: EVM_DEFINITION,
  address: evmAddress,
  endpoint(config, environment) {
    const endpoints = config.chains[environment];
    return {
      url: endpoints.erc20RpcUrl,
      urls: endpoints.erc20RpcUrls,
      contract: endpoints.usdtErc20Contract,
    };
  },
  configuredConfirmations: (config) => config.chains.confirmations.erc20,
  adapterOptions: ({ url, contract }, timeoutMs) => ({ rpcUrl: url, tokenAddress: contract, timeoutMs }),
  createAdapter: (options) => new EvmChainAdapter(options),
  createAdapterFor(network, { kind: _kind, ...options }) {
    if (network !== evmChain.network) throw new Error(`${network} cannot use an EVM endpoint.`);
    return evmChain.createAdapter(options);
  },
  entry(network, environment, config, context) {
    return networkChainEntry(evmChain, network, environment, config, context);
  },
  createWriter(chain, config) {
    const { url, urls, contract } = evmChain.endpoint(config, chain.environment);
    // Every provider (issue #34): sent to all, outcomes, heads and nonces agreed (pooled-writer.ts).
    const writers = (urls.length > 0 ? urls : [url!]).map(
      (rpcUrl) => new EvmChainWriter({ rpcUrl, tokenAddress: contract!, timeoutMs: CHAIN_RPC_TIMEOUT_MS }),
    );
    return pooledWriter(chain.adapter, writers);
  },
};

export {
  accountBytesFromPublicKey,
  type EvmAddress,
  evmAddressFromPublicKey,
  isEvmAddress,
  normalizeEvmAddress,
} from "./address.js";
export { EVM_DEFINITION } from "./definition.js";
export { type EvmAdapterOptions, EvmChainAdapter } from "./evm-adapter.js";
export { EvmChainWriter, type EvmWriterOptions } from "./evm-writer.js";
