import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { ChainAdapter } from "./adapter.js";
import { type EvmAdapterOptions, EvmChainAdapter } from "./evm/evm-adapter.js";
import { SimulatedChain, type SimulatedChainOptions } from "./simulator/simulated-chain.js";
import { SimulatorChainAdapter } from "./simulator/simulator-adapter.js";
import { type TronAdapterOptions, TronChainAdapter } from "./tron/tron-adapter.js";

/** How one (network, environment) reaches its chain; built from the validated config by the caller. */
export type ChainEndpoint =
  | ({ kind: "evm" } & EvmAdapterOptions)
  | ({ kind: "tron" } & TronAdapterOptions)
  | ({ kind: "simulator"; db: Db } & Omit<SimulatedChainOptions, "network">);

export function createChainAdapter(network: CurrencyType, endpoint: ChainEndpoint): ChainAdapter {
  switch (endpoint.kind) {
    case "evm":
      if (network !== "USDT-ERC20") throw new Error(`${network} cannot use an EVM endpoint.`);
      return new EvmChainAdapter(endpoint);
    case "tron":
      if (network !== "USDT-TRC20") throw new Error(`${network} cannot use a TRON endpoint.`);
      return new TronChainAdapter(endpoint);
    case "simulator": {
      const { db, kind: _kind, ...options } = endpoint;
      return new SimulatorChainAdapter(new SimulatedChain(db, { ...options, network }));
    }
  }
}
