import { type Config, ConfigError } from "../config/config.js";
import type { Db } from "../db/database.js";
import { CURRENCY_TYPES, type CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { Clock } from "../lib/clock.js";
import type { ChainAdapter } from "./adapter.js";
import { ChainUnavailableError, InvalidAddressError } from "./errors.js";
import { EvmChainAdapter } from "./evm/evm-adapter.js";
import { SimulatedChain } from "./simulator/simulated-chain.js";
import { SimulatorChainAdapter } from "./simulator/simulator-adapter.js";
import { TronChainAdapter } from "./tron/tron-adapter.js";

/** Confirmations when the variables are unset (CONTRACT §10). The sandbox simulator always uses 1. */
export const DEFAULT_CONFIRMATIONS: Readonly<Record<CurrencyType, number>> = {
  "USDT-TRC20": 19,
  "USDT-ERC20": 12,
};
export const SIMULATOR_CONFIRMATIONS = 1;
/** RPC timeout of every chain call (SPEC §8.4 asks for 10 to 15 s). */
export const CHAIN_RPC_TIMEOUT_MS = 12_000;

/** How the watcher scans one chain. */
export interface ScanSettings {
  /** Interval between polls of the head while caught up. */
  pollIntervalMs: number;
  /** First and largest block range of one scan step (adapted between 1 and the maximum). */
  initialRangeBlocks: number;
  maxRangeBlocks: number;
}

export interface AvailableChain {
  status: "available";
  network: CurrencyType;
  environment: Environment;
  kind: "evm" | "tron" | "simulator";
  /** Host of the endpoint, for logs and `/readyz` (never a path or query: those may carry keys). */
  endpoint: string;
  adapter: ChainAdapter;
  confirmations: number;
  scan: ScanSettings;
  /** The database-backed simulator when `kind` is "simulator". */
  simulator: SimulatedChain | null;
}

export interface UnavailableChain {
  status: "unavailable";
  network: CurrencyType;
  environment: Environment;
  /** Why, e.g. "not configured (set ERC20_RPC_URL)". */
  reason: string;
}

export type ChainEntry = AvailableChain | UnavailableChain;

/** Every (network, environment) chain of a deployment. */
export class ChainRegistry {
  private readonly entries = new Map<string, ChainEntry>();

  constructor(entries: ChainEntry[]) {
    for (const e of entries) this.entries.set(`${e.network}/${e.environment}`, e);
  }

  entry(network: CurrencyType, environment: Environment): ChainEntry {
    const e = this.entries.get(`${network}/${environment}`);
    if (!e) return { status: "unavailable", network, environment, reason: "not configured" };
    return e;
  }

  /** The chain, or `AppError("CHAIN_UNAVAILABLE")` (503) when it is not configured. */
  get(network: CurrencyType, environment: Environment): AvailableChain {
    const e = this.entry(network, environment);
    if (e.status !== "available") {
      throw new AppError(
        "CHAIN_UNAVAILABLE",
        `${network} is not available in ${environment}.`,
        { network, environment },
        true,
      );
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
    return e.status === "available" ? e.confirmations : DEFAULT_CONFIRMATIONS[network];
  }

  available(): AvailableChain[] {
    return [...this.entries.values()].filter((e): e is AvailableChain => e.status === "available");
  }

  all(): ChainEntry[] {
    return [...this.entries.values()];
  }
}

/** `ChainUnavailableError` of an adapter as the API's 503. */
export function chainUnavailable(err: ChainUnavailableError): AppError {
  return new AppError("CHAIN_UNAVAILABLE", `${err.network} is not reachable; try again later.`, {}, true);
}
export { ChainUnavailableError };

export interface BuildChainRegistryOptions {
  db: Db;
  clock: Clock;
  /** Tests shorten it to exercise hanging endpoints. */
  rpcTimeoutMs?: number;
}

/**
 * The chains of a deployment from its configuration (CONTRACT §1, §10):
 * - production: `ERC20_RPC_URL` / `TRC20_API_URL` with `USDT_*_CONTRACT`; unset → unavailable;
 * - sandbox: `SANDBOX_*` when set (a testnet; its contract must be set too), else the simulator.
 */
export function buildChainRegistry(config: Config, options: BuildChainRegistryOptions): ChainRegistry {
  const timeoutMs = options.rpcTimeoutMs ?? CHAIN_RPC_TIMEOUT_MS;
  const entries: ChainEntry[] = [];
  for (const environment of ["production", "sandbox"] as const) {
    const endpoints = config.chains[environment];
    const prefix = environment === "sandbox" ? "SANDBOX_" : "";
    for (const network of CURRENCY_TYPES) {
      const confirmations =
        (network === "USDT-ERC20" ? config.chains.confirmations.erc20 : config.chains.confirmations.trc20) ??
        DEFAULT_CONFIRMATIONS[network];
      const url = network === "USDT-ERC20" ? endpoints.erc20RpcUrl : endpoints.trc20ApiUrl;
      const contract = network === "USDT-ERC20" ? endpoints.usdtErc20Contract : endpoints.usdtTrc20Contract;
      const urlVar = `${prefix}${network === "USDT-ERC20" ? "ERC20_RPC_URL" : "TRC20_API_URL"}`;
      const contractVar = `${prefix}USDT_${network === "USDT-ERC20" ? "ERC20" : "TRC20"}_CONTRACT`;
      if (!url) {
        if (environment === "production") {
          entries.push({
            status: "unavailable",
            network,
            environment,
            reason: `not configured (set ${urlVar})`,
          });
          continue;
        }
        const simulator = new SimulatedChain(options.db, { network, environment, clock: options.clock });
        entries.push({
          status: "available",
          network,
          environment,
          kind: "simulator",
          endpoint: "simulator",
          adapter: new SimulatorChainAdapter(simulator),
          confirmations: SIMULATOR_CONFIRMATIONS,
          // Each mined block is announced by NOTIFY, so the watcher wakes at once; the poll is the
          // fallback when LISTEN is unavailable.
          scan: { pollIntervalMs: 1_000, initialRangeBlocks: 1000, maxRangeBlocks: 5000 },
          simulator,
        });
        continue;
      }
      if (!contract) {
        entries.push({
          status: "unavailable",
          network,
          environment,
          reason: `not configured (set ${contractVar})`,
        });
        continue;
      }
      const host = new URL(url).host;
      let adapter: ChainAdapter;
      try {
        adapter =
          network === "USDT-ERC20"
            ? new EvmChainAdapter({ rpcUrl: url, tokenAddress: contract, timeoutMs })
            : new TronChainAdapter({ apiUrl: url, tokenAddress: contract, timeoutMs });
      } catch (err) {
        if (err instanceof InvalidAddressError) {
          throw new ConfigError([{ variable: contractVar, message: `not a valid ${network} address` }]);
        }
        throw err;
      }
      entries.push({
        status: "available",
        network,
        environment,
        kind: network === "USDT-ERC20" ? "evm" : "tron",
        endpoint: host,
        adapter,
        confirmations,
        // Ethereum: 12 s blocks, log queries over ranges; TRON: 3 s blocks, one call per block.
        scan:
          network === "USDT-ERC20"
            ? { pollIntervalMs: 2_000, initialRangeBlocks: 100, maxRangeBlocks: 1_000 }
            : { pollIntervalMs: 1_000, initialRangeBlocks: 20, maxRangeBlocks: 100 },
        simulator: null,
      });
    }
  }
  return new ChainRegistry(entries);
}
