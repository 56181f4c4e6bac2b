import { accountBytesFromPublicKey } from "../evm/address.js";
import type { AddressCodec, NetworkChainModule } from "../module.js";
import { CHAIN_RPC_TIMEOUT_MS } from "../module.js";
import { networkChainEntry } from "../network-entry.js";
import { pooledWriter } from "../pooled-writer.js";
import { isTronAddress, normalizeTronAddress, tronAddressFromBytes } from "./address.js";
import { TRON_DEFINITION } from "./definition.js";
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
};

export const tronChain: NetworkChainModule<TronAdapterOptions> = {
  kind: TRON_DEFINITION.kind,
  network: TRON_DEFINITION.network,
  definition: TRON_DEFINITION,
  address: tronAddress,
  endpoint(config, environment) {
    const endpoints = config.chains[environment];
    return {
      url: endpoints.trc20ApiUrl,
      urls: endpoints.trc20ApiUrls,
      contract: endpoints.usdtTrc20Contract,
    };
  },
  configuredConfirmations: (config) => config.chains.confirmations.trc20,
  adapterOptions: ({ url, contract }, timeoutMs) => ({ apiUrl: url, tokenAddress: contract, timeoutMs }),
  createAdapter: (options) => new TronChainAdapter(options),
  createAdapterFor(network, { kind: _kind, ...options }) {
    if (network !== tronChain.network) throw new Error(`${network} cannot use a TRON endpoint.`);
    return tronChain.createAdapter(options);
  },
  entry(network, environment, config, context) {
    return networkChainEntry(tronChain, network, environment, config, context);
  },
  createWriter(chain, config) {
    const { url, urls, contract } = tronChain.endpoint(config, chain.environment);
    // Every provider (issue #34): sent to all, outcomes and heads agreed (pooled-writer.ts).
    const writers = (urls.length > 0 ? urls : [url!]).map(
      (apiUrl) =>
        new TronChainWriter({
          apiUrl,
          tokenAddress: contract!,
          timeoutMs: CHAIN_RPC_TIMEOUT_MS,
          feeLimitSun: config.sending.tronFeeLimitSun,
        }),
    );
    return pooledWriter(chain.adapter, writers);
  },
};

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
export { TRON_DEFINITION } from "./definition.js";
export { type TronAdapterOptions, TronChainAdapter } from "./tron-adapter.js";
export { TronChainWriter, type TronWriterOptions } from "./tron-writer.js";
