import type { Config } from "../config/config.js";
import type { Db } from "../db/database.js";
import type { CurrencyType, NetworkDefinition } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { ChainAdapter } from "./adapter.js";
import type { Disagreement } from "./provider-pool.js";
import type { ChainWriter } from "./writer.js";

/**
 * The one shape of a chain module (`chains/evm`, `chains/tron`, `chains/simulator`): what the
 * registry, the adapter and writer factories and the address codec iterate over. A network's data
 * (chain id, tokens, defaults) is its `NetworkDefinition` in the registry (`domain/currency.ts`); its
 * settings are `Config.chains.networks[network]`, read by one naming rule (`config/chains.ts`).
 */

/** RPC timeout of every chain call (10 to 15 s: docs/decisions/chains.md#chains-part-1, decision 13). */
export const CHAIN_RPC_TIMEOUT_MS = 12_000;

/** How the watcher scans one chain. */
export interface ScanSettings {
  /** Interval between polls of the head while caught up. */
  pollIntervalMs: number;
  /** First and largest block range of one scan step (adapted between 1 and the maximum). */
  initialRangeBlocks: number;
  maxRangeBlocks: number;
}

/**
 * An available chain. `Simulator`: the type of its `simulator` (the registry's `AvailableChain` is
 * `AvailableChainOf<SimulatedChain>`; a network module's chains have none, `never`). Generic so that
 * this file, which the network modules import, does not import the simulator (a folder cycle).
 */
export interface AvailableChainOf<Simulator> {
  status: "available";
  network: CurrencyType;
  environment: Environment;
  /** The module that serves it: "evm", "tron" or "simulator" (a chain module's `kind`). */
  kind: string;
  /** Host of the endpoint, for logs and `/readyz` (never a path or query: those may carry keys). */
  endpoint: string;
  /** How many providers the adapter reads from (more than one: a `ProviderPool`, issue #22). */
  providers: number;
  adapter: ChainAdapter;
  /** The token contract read and sent (null on the simulator, which has none). */
  contract: string | null;
  confirmations: number;
  scan: ScanSettings;
  /** The database-backed simulator when `kind` is "simulator". */
  simulator: Simulator | null;
}

export interface UnavailableChain {
  status: "unavailable";
  network: CurrencyType;
  environment: Environment;
  /** Why, e.g. "not configured (set ERC20_RPC_URL)". */
  reason: string;
}

export type ChainEntryOf<Simulator> = AvailableChainOf<Simulator> | UnavailableChain;

/** What building a chain needs besides the configuration. */
export interface ChainBuildContext {
  db: Db;
  clock: Clock;
  timeoutMs: number;
  /** Told of each disagreement between providers (issue #22: logged and counted by the runtime). */
  onDisagreement?: ((event: Disagreement) => void) | undefined;
}

/** The configuration a writer is built from. */
export type WriterConfig = Pick<Config, "chains" | "sending">;

export interface ChainModule<Endpoint = never, Simulator = never> {
  readonly kind: string;
  /** The read side of `network` over an explicit endpoint (`createChainAdapter`: tools and tests). */
  createAdapterFor(network: CurrencyType, endpoint: { kind: string } & Endpoint): ChainAdapter;
  /**
   * The chain of (network, environment) when this module serves it: an available chain, or an
   * unavailable one with the reason (a missing variable). Null: not this module's; the registry
   * asks the next one.
   */
  entry(
    network: CurrencyType,
    environment: Environment,
    config: Config,
    context: ChainBuildContext,
  ): ChainEntryOf<Simulator> | null;
  /** The write side of one of this module's available chains, from the same configuration. */
  createWriter(chain: AvailableChainOf<Simulator>, config: WriterConfig, hotWallet: string): ChainWriter;
}

/** Addresses of one network: how users type them, how stablegate spells them, how keys map to them. */
export interface AddressCodec {
  /** Whether `s` is a valid address of the network as a user would type it. */
  validate(s: string): boolean;
  /** The canonical spelling stablegate stores and compares; throws `InvalidAddressError`. */
  normalize(s: string): string;
  /** The address of a secp256k1 public key (compressed or not). */
  fromPublicKey(publicKey: Uint8Array): string;
  /** The address of 20 account bytes (what both networks hash a key to). */
  fromAccountBytes(account: Uint8Array): string;
  /** The 20 account bytes of a valid address (throws `InvalidAddressError` otherwise). */
  toAccountBytes(address: string): Uint8Array;
}

/** Where one (network, environment) is reached, as configured. */
export interface NetworkEndpoint {
  url: string | undefined;
  /** Every configured provider (the first is `url`). */
  urls: string[];
  contract: string | undefined;
}

/**
 * The module of a real network (`evmChain(definition)` for each EVM network, `tronChain(definition)`):
 * it serves its network's currency types wherever its endpoint is configured, and owns that
 * network's address codec (the simulator spells addresses with it).
 */
export interface NetworkChainModule<AdapterOptions> extends ChainModule<AdapterOptions> {
  /** The network's name (`ERC20`). */
  readonly network: string;
  readonly definition: NetworkDefinition;
  readonly address: AddressCodec;
  /** How the watcher scans it (EVM: log ranges; TRON: a block per call). */
  readonly scan: Readonly<ScanSettings>;
  /** The endpoint of a currency type of the network in `environment`, as configured. */
  endpoint(
    config: Pick<Config, "chains">,
    currencyType: CurrencyType,
    environment: Environment,
  ): NetworkEndpoint;
  /** The read side over an endpoint (throws `InvalidAddressError` for a bad token address). */
  createAdapter(options: AdapterOptions): ChainAdapter;
  /** The read side's options from the configured endpoint. */
  adapterOptions(
    currencyType: CurrencyType,
    endpoint: { url: string; contract: string },
    timeoutMs: number,
  ): AdapterOptions;
}
