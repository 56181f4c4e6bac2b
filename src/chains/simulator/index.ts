import type { CurrencyType } from "../../domain/currency.js";
import { addressCodec } from "../address.js";
import type { AddressCodec, ChainModule } from "../module.js";
import { SIMULATOR_DEFINITION } from "./definition.js";
import { SimulatedChain, type SimulatedChainOptions } from "./simulated-chain.js";
import { SimulatorChainAdapter } from "./simulator-adapter.js";
import { SimulatorChainWriter } from "./simulator-writer.js";

/**
 * The sandbox simulator module: the database-backed chain (`SimulatedChain`) that stands in for any
 * network in the sandbox when its `SANDBOX_*` endpoint is unset (docs/chains.md#the-simulator-sandbox-default). It spells addresses
 * as the network it simulates does.
 */

/** The simulator of `network` uses that network's addresses. */
export function simulatorAddress(network: CurrencyType): AddressCodec {
  return addressCodec(network);
}

export type SimulatorEndpoint = Omit<SimulatedChainOptions, "network"> & {
  db: ConstructorParameters<typeof SimulatedChain>[0];
};

export const simulatorChain: ChainModule<SimulatorEndpoint, SimulatedChain> = {
  kind: SIMULATOR_DEFINITION.kind,
  createAdapterFor(network, { db, kind: _kind, ...options }) {
    return new SimulatorChainAdapter(new SimulatedChain(db, { ...options, network }));
  },
  /** Every sandbox chain the network modules left unconfigured; never production. */
  entry(network, environment, _config, context) {
    if (environment !== "sandbox") return null;
    const simulator = new SimulatedChain(context.db, { network, environment, clock: context.clock });
    return {
      status: "available",
      network,
      environment,
      kind: SIMULATOR_DEFINITION.kind,
      endpoint: "simulator",
      providers: 1,
      adapter: new SimulatorChainAdapter(simulator),
      contract: null,
      confirmations: SIMULATOR_DEFINITION.confirmations,
      scan: { ...SIMULATOR_DEFINITION.scan },
      simulator,
    };
  },
  createWriter(chain, _config, hotWallet) {
    if (!chain.simulator) throw new Error("simulator chain without a simulator");
    return new SimulatorChainWriter(chain.simulator, { hotWallet });
  },
};

export { SIMULATOR_DEFINITION } from "./definition.js";
export {
  SIM_BLOCK_CHANNEL,
  type SimBlock,
  type SimTransaction,
  type SimTransactionStatus,
  type SimTransferOptions,
  SimulatedChain,
  type SimulatedChainOptions,
  type SimWriteOptions,
} from "./simulated-chain.js";
export { SimulatorChainAdapter } from "./simulator-adapter.js";
export { SimulatorChainWriter, type SimulatorWriterOptions } from "./simulator-writer.js";
