import type { Config } from "../config/config.js";
import type { Db } from "../db/database.js";
import { CURRENCY_TYPES, type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { Clock } from "../lib/clock.js";
import {
  type AvailableChainOf,
  CHAIN_RPC_TIMEOUT_MS,
  type ChainEntryOf,
  type ChainModule,
  type WriterConfig,
} from "./module.js";
import { networkChains } from "./networks.js";
import type { Disagreement } from "./provider-pool.js";
import { type SimulatedChain, simulatorChain } from "./simulator/index.js";
import type { ChainWriter } from "./writer.js";

export { ChainUnavailableError } from "./errors.js";
export type { ScanSettings, UnavailableChain } from "./module.js";

export type AvailableChain = AvailableChainOf<SimulatedChain>;
export type ChainEntry = ChainEntryOf<SimulatedChain>;
export { CHAIN_RPC_TIMEOUT_MS } from "./module.js";

/**
 * Every chain module, in the order the registry asks them: the network modules (`networks.ts`),
 * then the sandbox simulator, which serves any sandbox chain they left unconfigured.
 */
// biome-ignore lint/suspicious/noExplicitAny: each module has its own endpoint type.
export function chainModules(): readonly ChainModule<any, SimulatedChain>[] {
  return [...networkChains(), simulatorChain];
}

/** Confirmations when `CONFIRMATIONS_<NETWORK>` is unset (docs/chains.md#the-read-side-chainadapter). The sandbox simulator always uses 1. */
export function defaultConfirmations(network: CurrencyType): number {
  return currencyOf(network).definition.defaultConfirmations;
}

const NOT_ENABLED = "not enabled (CURRENCY_TYPES)";

/** Every (network, environment) chain of a deployment. */
export class ChainRegistry {
  private readonly entries = new Map<string, ChainEntry>();

  private readonly enabledTypes: readonly CurrencyType[];

  /** `enabled`: the currency types with chains (default: those of `entries`). */
  constructor(entries: ChainEntry[], enabled?: readonly CurrencyType[]) {
    for (const e of entries) this.entries.set(`${e.network}/${e.environment}`, e);
    this.enabledTypes = enabled ?? CURRENCY_TYPES.filter((c) => entries.some((e) => e.network === c));
  }

  entry(network: CurrencyType, environment: Environment): ChainEntry {
    const e = this.entries.get(`${network}/${environment}`);
    if (!e) return { status: "unavailable", network, environment, reason: NOT_ENABLED };
    return e;
  }

  /** Whether `CURRENCY_TYPES` enables the currency type. */
  enabled(network: CurrencyType): boolean {
    return this.enabledTypes.includes(network);
  }

  /** The enabled currency types, in the registry's order. */
  enabledCurrencyTypes(): readonly CurrencyType[] {
    return this.enabledTypes;
  }

  /**
   * The chain; a currency type `CURRENCY_TYPES` does not enable is a 400 on `currencyType` (what the
   * caller asked for does not exist here); an enabled one that is not configured or reachable is
   * `AppError("CHAIN_UNAVAILABLE")` (503).
   */
  get(network: CurrencyType, environment: Environment): AvailableChain {
    if (!this.enabled(network)) {
      throw new AppError("VALIDATION_ERROR", `${network} is not enabled on this deployment.`, {
        fields: [
          {
            field: "currencyType",
            message: `${network} is not enabled (enabled: ${this.enabledTypes.join(", ")})`,
          },
        ],
      });
    }
    const e = this.entry(network, environment);
    if (e.status !== "available") {
      throw new AppError("CHAIN_UNAVAILABLE", `${network} is not available in ${environment}.`, {
        network,
        environment,
      });
    }
    return e;
  }

  /**
   * The sandbox simulator of `network` (what the sandbox pay endpoints use). Throws
   * `CHAIN_UNAVAILABLE` when that sandbox chain is a configured testnet rather than the simulator.
   */
  simulator(network: CurrencyType, environment: Environment = "sandbox"): SimulatedChain {
    const chain = this.get(network, environment);
    if (!chain.simulator) {
      throw new AppError(
        "CHAIN_UNAVAILABLE",
        `The ${environment} ${network} chain is a configured network, not the simulator; pay it from a wallet.`,
        { network, environment },
      );
    }
    return chain.simulator;
  }

  /**
   * Confirmations a transfer needs on this chain (the configured number; the network's default when
   * the chain is not available).
   */
  requiredConfirmations(network: CurrencyType, environment: Environment): number {
    const e = this.entry(network, environment);
    return e.status === "available" ? e.confirmations : defaultConfirmations(network);
  }

  available(): AvailableChain[] {
    return [...this.entries.values()].filter((e): e is AvailableChain => e.status === "available");
  }

  all(): ChainEntry[] {
    return [...this.entries.values()];
  }
}

export interface BuildChainRegistryOptions {
  db: Db;
  clock: Clock;
  /** Tests shorten it to exercise hanging endpoints. */
  rpcTimeoutMs?: number;
  /** Told of each disagreement between a chain's providers (issue #22). */
  onDisagreement?: (event: Disagreement) => void;
}

/**
 * The chains of a deployment from its configuration (docs/chains.md#chain-registry-runtimechains, README.md#configuration): each (network,
 * environment) is the first chain module's that serves it (`CHAIN_MODULES`):
 * - production: the network's endpoint and contract variables; unset → unavailable;
 * - sandbox: `SANDBOX_*` when set (a testnet; its contract must be set too), else the simulator.
 */
export function buildChainRegistry(config: Config, options: BuildChainRegistryOptions): ChainRegistry {
  const context = {
    db: options.db,
    clock: options.clock,
    timeoutMs: options.rpcTimeoutMs ?? CHAIN_RPC_TIMEOUT_MS,
    onDisagreement: options.onDisagreement,
  };
  const entries: ChainEntry[] = [];
  const modules = chainModules();
  for (const environment of ["production", "sandbox"] as const) {
    // Only the enabled currency types have chains: the others are not read, watched or sent on.
    for (const network of config.chains.enabled) {
      let entry: ChainEntry | null = null;
      for (const module of modules) {
        entry = module.entry(network, environment, config, context);
        if (entry) break;
      }
      entries.push(entry ?? { status: "unavailable", network, environment, reason: "not configured" });
    }
  }
  return new ChainRegistry(entries, config.chains.enabled);
}

/** The write side of an available chain, from the same configuration as its read side (its module's). */
export function createChainWriter(
  chain: AvailableChain,
  config: WriterConfig,
  hotWallet: string,
): ChainWriter {
  const module =
    chain.kind === "simulator"
      ? simulatorChain
      : networkChains().find((m) => m.network === currencyOf(chain.network).network);
  if (!module) throw new Error(`No chain module serves ${chain.network} (${chain.kind}).`);
  return module.createWriter(chain, config, hotWallet);
}
