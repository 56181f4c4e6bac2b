import type { CurrencyType } from "../domain/currency.js";
import type { ChainAdapter } from "./adapter.js";
import type { EvmAdapterOptions } from "./evm/index.js";
import { CHAIN_MODULES } from "./registry.js";
import type { SimulatorEndpoint } from "./simulator/index.js";
import type { TronAdapterOptions } from "./tron/index.js";

/**
 * How one (network, environment) reaches its chain, named by the module's `kind`; built by the
 * caller (tools, tests). The deployment's chains come from the configuration (`buildChainRegistry`).
 */
export type ChainEndpoint =
  | ({ kind: "evm" } & EvmAdapterOptions)
  | ({ kind: "tron" } & TronAdapterOptions)
  | ({ kind: "simulator" } & SimulatorEndpoint);

/** The read side of `network` over `endpoint`, by the chain module of its kind. */
export function createChainAdapter(network: CurrencyType, endpoint: ChainEndpoint): ChainAdapter {
  const module = CHAIN_MODULES.find((m) => m.kind === endpoint.kind);
  if (!module) throw new Error(`No chain module of kind ${endpoint.kind}.`);
  return module.createAdapterFor(network, endpoint);
}
