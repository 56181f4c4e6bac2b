import { evmChain } from "./evm/index.js";
import type { NetworkChainModule } from "./module.js";
import { tronChain } from "./tron/index.js";

/**
 * THE list of network chain modules. Adding a chain = its folder (`chains/<chain>/`: definition,
 * address codec, adapter, writer, `index.ts` exporting its `NetworkChainModule`) plus one line here
 * (and, for its variables, the lines of `config/` that read its `definition.ts`). The registry, the
 * address codec and the adapter and writer factories iterate over it; the sandbox simulator follows
 * it as the fallback (`registry.ts`).
 */
// biome-ignore lint/suspicious/noExplicitAny: each module has its own adapter options.
export const NETWORK_CHAINS: readonly NetworkChainModule<any>[] = [evmChain, tronChain];
