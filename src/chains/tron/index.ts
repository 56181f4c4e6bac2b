import { currencyOf, type NetworkDefinition } from "../../domain/currency.js";
import { accountBytesFromPublicKey } from "../evm/address.js";
import type { AddressCodec, NetworkChainModule } from "../module.js";
import { CHAIN_RPC_TIMEOUT_MS } from "../module.js";
import { networkChainEntry } from "../network-entry.js";
import { pooledWriter } from "../pooled-writer.js";
import { isTronAddress, normalizeTronAddress, tronAddressFromBytes, tronAddressToBytes } from "./address.js";
import { type TronAdapterOptions, TronChainAdapter } from "./tron-adapter.js";
import { TronChainWriter } from "./tron-writer.js";

/**
 * The TRON module (USDT-TRC20): HTTP API read side (`TronChainAdapter`), node-built transactions
 * on the write side (`TronChainWriter`), base58check addresses.
 */

/** Base58check addresses (`T…`): 0x41 + the same 20 account bytes an EVM address has. */
export const tronAddress: AddressCodec = {
  validate: isTronAddress,
  normalize: normalizeTronAddress,
  fromPublicKey: (publicKey) => tronAddressFromBytes(accountBytesFromPublicKey(publicKey)),
  fromAccountBytes: tronAddressFromBytes,
  toAccountBytes: tronAddressToBytes,
};

/** The TRON module of the registry's TRON network (its one token: USDT). */
export function tronChain(definition: NetworkDefinition): NetworkChainModule<TronAdapterOptions> {
  const module: NetworkChainModule<TronAdapterOptions> = {
    kind: "tron",
    network: definition.network,
    definition,
    address: tronAddress,
    // 3 s blocks, one call per block.
    scan: { pollIntervalMs: definition.pollIntervalMs, initialRangeBlocks: 20, maxRangeBlocks: 100 },
    endpoint(config, currencyType, environment) {
      const settings = config.chains.networks[definition.network]?.[environment];
      const urls = settings?.urls ?? [];
      return { url: urls[0], urls: [...urls], contract: settings?.contracts[currencyOf(currencyType).token] };
    },
    adapterOptions: (_currencyType, { url, contract }, timeoutMs) => ({
      apiUrl: url,
      tokenAddress: contract,
      timeoutMs,
    }),
    createAdapter: (options) => new TronChainAdapter(options),
    createAdapterFor(currencyType, { kind: _kind, ...options }) {
      if (currencyOf(currencyType).network !== definition.network)
        throw new Error(`${currencyType} cannot use a TRON endpoint.`);
      return new TronChainAdapter(options);
    },
    entry(currencyType, environment, config, context) {
      return networkChainEntry(module, currencyType, environment, config, context);
    },
    createWriter(chain, config) {
      const { url, urls, contract } = module.endpoint(config, chain.network, chain.environment);
      const feeLimitSun = config.chains.networks[definition.network]?.options.feeLimitSun;
      // Every provider (issue #34): sent to all, outcomes and heads agreed (pooled-writer.ts).
      const writers = (urls.length > 0 ? urls : [url!]).map(
        (apiUrl) =>
          new TronChainWriter({
            apiUrl,
            tokenAddress: contract!,
            timeoutMs: CHAIN_RPC_TIMEOUT_MS,
            ...(feeLimitSun === undefined ? {} : { feeLimitSun }),
          }),
      );
      return pooledWriter(chain.adapter, writers);
    },
  };
  return module;
}

export {
  isTronAddress,
  normalizeTronAddress,
  TRON_ADDRESS_PREFIX,
  tronAddressFromBytes,
  tronAddressFromHex,
  tronAddressToBytes,
  tronAddressToEvm,
  tronAddressToHex,
} from "./address.js";
export { type TronAdapterOptions, TronChainAdapter } from "./tron-adapter.js";
export { TronChainWriter, type TronWriterOptions } from "./tron-writer.js";
