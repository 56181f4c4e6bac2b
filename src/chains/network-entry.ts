import { networkVariables } from "../config/chains.js";
import { type Config, ConfigError } from "../config/config.js";
import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { ChainAdapter } from "./adapter.js";
import { InvalidAddressError } from "./errors.js";
import type { ChainBuildContext, ChainEntryOf, NetworkChainModule } from "./module.js";
import { ProviderPool } from "./provider-pool.js";
import { recordProviderHealth } from "./provider-status.js";

/**
 * The chain of (network, environment) as a network module serves it (docs/chains.md#chain-registry-runtimechains, README.md#configuration), the same
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
  const currency = currencyOf(network);
  if (currency.network !== module.network) return null;
  const { definition } = module;
  const variables = networkVariables(definition, environment);
  const { url, urls, contract } = module.endpoint(config, network, environment);
  if (!url) {
    if (environment !== "production") return null;
    return {
      status: "unavailable",
      network,
      environment,
      reason: `not configured (set ${variables.endpoint})`,
    };
  }
  const contractVar = variables.contract(currency.token);
  if (!contract) {
    return { status: "unavailable", network, environment, reason: `not configured (set ${contractVar})` };
  }
  const all = urls.length > 0 ? urls : [url];
  const names = providerNames(all);
  let adapter: ChainAdapter;
  try {
    const adapters = all.map((u) =>
      module.createAdapter(module.adapterOptions(network, { url: u, contract }, context.timeoutMs)),
    );
    adapter =
      adapters.length === 1 && adapters[0]
        ? adapters[0]
        : new ProviderPool(
            network,
            adapters.map((a, i) => ({ name: names[i] ?? `p${i + 1}`, adapter: a })),
            {
              now: () => context.clock.now(),
              onDisagreement: (e) => context.onDisagreement?.({ ...e, environment }),
              // Kept for `/readyz` on every instance; a failed write is retried by the next probe.
              onHealth: (health) => {
                recordProviderHealth(
                  context.db,
                  network,
                  environment,
                  health,
                  new Date(context.clock.now()),
                ).catch(() => undefined);
              },
            },
          );
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
    endpoint: all.length === 1 ? new URL(url).host : names.join(", "),
    providers: all.length,
    adapter,
    contract,
    confirmations:
      config.chains.networks[definition.network]?.confirmations ?? definition.defaultConfirmations,
    scan: { ...module.scan },
    simulator: null,
  };
}

/** `p<n> <host>` for each provider: a host only (a URL's path or query may carry an API key). */
export function providerNames(urls: readonly string[]): string[] {
  return urls.map((u, i) => `p${i + 1} ${new URL(u).host}`);
}
