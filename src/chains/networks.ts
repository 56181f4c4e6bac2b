import { type ChainFamily, NETWORKS, type NetworkDefinition } from "../domain/currency.js";
import { evmChain } from "./evm/index.js";
import type { NetworkChainModule } from "./module.js";
import { tronChain } from "./tron/index.js";

/**
 * The chain module of each network of the registry (`domain/currency.ts`): every EVM network is
 * served by `evmChain(definition)`, TRON by `tronChain(definition)`. Adding an EVM network is its
 * definition in the registry; nothing here changes. The registry, the address codec and the adapter
 * and writer factories iterate over `networkChains()`; the sandbox simulator follows it as the
 * fallback (`registry.ts`).
 */
// biome-ignore lint/suspicious/noExplicitAny: each module has its own adapter options.
const FAMILIES: Readonly<Record<ChainFamily, (definition: NetworkDefinition) => NetworkChainModule<any>>> = {
  evm: evmChain,
  tron: tronChain,
};

// biome-ignore lint/suspicious/noExplicitAny: each module has its own adapter options.
const built = new Map<NetworkDefinition, NetworkChainModule<any>>();

/** The module of every registered network (built once each; a fixture's network included). */
// biome-ignore lint/suspicious/noExplicitAny: each module has its own adapter options.
export function networkChains(): readonly NetworkChainModule<any>[] {
  return NETWORKS.map((definition) => {
    let module = built.get(definition);
    if (!module) {
      module = FAMILIES[definition.family](definition);
      built.set(definition, module);
    }
    return module;
  });
}

/** The module of a network by its name (`ERC20`). */
// biome-ignore lint/suspicious/noExplicitAny: each module has its own adapter options.
export function networkChain(network: string): NetworkChainModule<any> {
  const module = networkChains().find((m) => m.network === network);
  if (!module) throw new Error(`No chain module serves network ${network}.`);
  return module;
}
