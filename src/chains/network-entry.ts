import { type Config, ConfigError } from "../config/config.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { ChainAdapter } from "./adapter.js";
import { InvalidAddressError } from "./errors.js";
import type { ChainBuildContext, ChainEntryOf, NetworkChainModule } from "./module.js";

/**
 * The chain of (network, environment) as a network module serves it (CONTRACT §1, §10), the same
 * for every real network:
 * - another network: null;
 * - endpoint unset: production → unavailable (naming the variable); sandbox → null (the registry
 *   falls back to the simulator);
 * - endpoint set without a contract: unavailable (naming the contract variable);
 * - a contract that is not an address of the network: `ConfigError` naming the variable.
 */
export function networkChainEntry<O>(
  module: NetworkChainModule<O>,
  network: CurrencyType,
  environment: Environment,
  config: Config,
  context: ChainBuildContext,
): ChainEntryOf<never> | null {
  if (network !== module.network) return null;
  const { definition } = module;
  const { url, contract } = module.endpoint(config, environment);
  if (!url) {
    if (environment !== "production") return null;
    return {
      status: "unavailable",
      network,
      environment,
      reason: `not configured (set ${definition.variables.endpoint[environment]})`,
    };
  }
  const contractVar = definition.variables.contract[environment];
  if (!contract) {
    return { status: "unavailable", network, environment, reason: `not configured (set ${contractVar})` };
  }
  const host = new URL(url).host;
  let adapter: ChainAdapter;
  try {
    adapter = module.createAdapter(module.adapterOptions({ url, contract }, context.timeoutMs));
  } catch (err) {
    if (err instanceof InvalidAddressError) {
      throw new ConfigError([{ variable: contractVar, message: `not a valid ${network} address` }]);
    }
    throw err;
  }
  return {
    status: "available",
    network,
    environment,
    kind: module.kind,
    endpoint: host,
    adapter,
    confirmations: module.configuredConfirmations(config) ?? definition.defaultConfirmations,
    scan: { ...definition.scan },
    simulator: null,
  };
}
