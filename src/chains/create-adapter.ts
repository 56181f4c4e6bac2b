import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { ChainAdapter } from "./adapter.js";
import type { EvmAdapterOptions } from "./evm/index.js";
import { networkChain } from "./networks.js";
import type { SimulatorEndpoint } from "./simulator/index.js";
import { simulatorChain } from "./simulator/index.js";
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
  if (endpoint.kind === "simulator") return simulatorChain.createAdapterFor(network, endpoint);
  const module = networkChain(currencyOf(network).network);
  if (module.kind !== endpoint.kind) throw new Error(`${network} cannot use a ${endpoint.kind} endpoint.`);
  return module.createAdapterFor(network, endpoint);
}
