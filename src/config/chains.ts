import { z } from "zod";
import {
  CURRENCY_TYPES,
  type CurrencyType,
  currencyOf,
  DEFAULT_ENABLED_CURRENCY_TYPES,
  isCurrencyType,
  NETWORKS,
  type NetworkDefinition,
} from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { parseAmount } from "../domain/money.js";

/**
 * Each network's settings, read by the one naming rule the registry's networks share
 * (README.md#configuration): `<NETWORK>_RPC_URLS` (and the single `<NETWORK>_RPC_URL`),
 * `<TOKEN>_<NETWORK>_CONTRACT`, `CONFIRMATIONS_<NETWORK>`, `SWEEP_THRESHOLD_<NETWORK>`,
 * `HOT_WALLET_MAX_<NETWORK>` with `COLD_WALLET_<NETWORK>`, each endpoint, contract and cold-wallet
 * name also with the `SANDBOX_` prefix; plus the options a network declares (TRON's fee limit).
 * Nothing here knows a network by name: `domain/currency.ts` lists them, and the chain modules read
 * the result (`Config.chains.networks[network]`).
 */

export interface ColdWallet {
  /** The hot wallet keeps at most this (token base units) of each currency type… */
  max: bigint;
  /** …and forwards the excess here. */
  address: string;
}

/** One network in one environment, as configured. */
export interface NetworkEnvironmentSettings {
  /** Every provider (the first is the write side's first endpoint), without repeats. */
  urls: readonly string[];
  /** Token (`USDT`) → contract: the variable, else (production) the mainnet default. */
  contracts: Readonly<Record<string, string | undefined>>;
  /** Cold-wallet forwarding (issue #22); undefined: none. */
  cold: ColdWallet | undefined;
  /** An energy rental provider (TRON, decision 21 of docs/decisions/tron-resources.md); undefined: none. */
  rental?: RentalSettings | undefined;
}

/** `<NETWORK>_RENTAL_*`: an itrx.io-compatible energy rental API and the operator's price cap. */
export interface RentalSettings {
  url: string;
  apiKey: string;
  /** Signs orders: a secret, held only by the roles that order (serve, worker). */
  apiSecret: string;
  /** The most one unit of energy may cost (sun). */
  maxSunPerEnergy: number;
}

export interface SweepMaxCost {
  /** The share, in basis points (1 % = 100). */
  basisPoints: number;
  /** What one whole native coin (1 TRX, 1 ETH) is worth, in token base units. */
  nativePrice: bigint;
}

export interface NetworkSettings {
  /** `CONFIRMATIONS_<NETWORK>`; undefined: the definition's default. */
  confirmations: number | undefined;
  /** Deposit balances at or above this (token base units) are swept. */
  sweepThreshold: bigint;
  /**
   * `SWEEP_MAX_COST_PERCENT_<NETWORK>` with `NATIVE_PRICE_<NETWORK>`: a sweep whose own fee (the
   * native coin it burns, or the energy rented for it) is worth more than this share of its amount
   * waits for more deposits; undefined: no limit.
   */
  sweepMaxCost: SweepMaxCost | undefined;
  /**
   * `SWEEP_EIP7702_<NETWORK>` (issue #39): sweep in batches through the EIP-7702 sweeper contract,
   * without gas top-ups. Default: on where the network's definition runs EIP-7702.
   */
  sweepBatch: boolean;
  production: NetworkEnvironmentSettings;
  sandbox: NetworkEnvironmentSettings;
  /** The network's declared options (`NetworkDefinition.options`), by key. */
  options: Readonly<Record<string, number>>;
}

export interface ChainsConfig {
  /** `CURRENCY_TYPES`: the currency types the deployment serves. */
  enabled: readonly CurrencyType[];
  /** Every network of the registry, by name (`ERC20`). */
  networks: Readonly<Record<string, NetworkSettings>>;
}

/** The variable names of one network (for messages, docs and the chain modules' reasons). */
export function networkVariables(definition: NetworkDefinition, environment: Environment) {
  const p = environment === "sandbox" ? "SANDBOX_" : "";
  const single = definition.endpointVariable ?? `${definition.network}_RPC_URL`;
  return {
    endpoint: `${p}${single}`,
    endpoints: `${p}${single}S`,
    contract: (token: string) => `${p}${token}_${definition.network}_CONTRACT`,
    confirmations: `CONFIRMATIONS_${definition.network}`,
    sweepThreshold: `SWEEP_THRESHOLD_${definition.network}`,
    sweepMaxCostPercent: `SWEEP_MAX_COST_PERCENT_${definition.network}`,
    nativePrice: `NATIVE_PRICE_${definition.network}`,
    sweepEip7702: `SWEEP_EIP7702_${definition.network}`,
    hotWalletMax: `${p}HOT_WALLET_MAX_${definition.network}`,
    coldWallet: `${p}COLD_WALLET_${definition.network}`,
    rental: (part: "URL" | "API_KEY" | "API_SECRET" | "MAX_SUN_PER_ENERGY") =>
      `${p}${definition.network}_RENTAL_${part}`,
  };
}

const url = z.string().url();
const positiveInt = z.coerce.number().int().positive();
const ADDRESS_SHAPE: Record<NetworkDefinition["family"], { re: RegExp; message: string }> = {
  evm: { re: /^0x[0-9a-fA-F]{40}$/, message: "must be an EVM address (0x + 40 hex digits)" },
  tron: { re: /^T[1-9A-HJ-NP-Za-km-z]{33}$/, message: "must be a TRON address" },
};

type Problem = { variable: string; message: string };

/** Parses `CURRENCY_TYPES` and every network's variables; pushes what is wrong onto `problems`. */
export function parseChainsConfig(env: Readonly<Record<string, string>>, problems: Problem[]): ChainsConfig {
  const networks: Record<string, NetworkSettings> = {};
  for (const definition of NETWORKS) {
    networks[definition.network] = parseNetwork(env, definition, problems);
  }
  return { enabled: parseEnabled(env.CURRENCY_TYPES, problems), networks };
}

function parseEnabled(text: string | undefined, problems: Problem[]): CurrencyType[] {
  if (text === undefined) return [...DEFAULT_ENABLED_CURRENCY_TYPES];
  const names = text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const enabled: CurrencyType[] = [];
  for (const name of names) {
    if (!isCurrencyType(name)) {
      problems.push({
        variable: "CURRENCY_TYPES",
        message: `unknown currency type ${name} (known: ${CURRENCY_TYPES.join(", ")})`,
      });
    } else if (!enabled.includes(name)) enabled.push(name);
  }
  if (names.length === 0) problems.push({ variable: "CURRENCY_TYPES", message: "names no currency type" });
  // Display order is the registry's, whatever order the operator wrote.
  return CURRENCY_TYPES.filter((c) => enabled.includes(c));
}

function parseNetwork(
  env: Readonly<Record<string, string>>,
  definition: NetworkDefinition,
  problems: Problem[],
): NetworkSettings {
  const names = networkVariables(definition, "production");
  const confirmationsText = env[names.confirmations];
  let confirmations: number | undefined;
  if (confirmationsText !== undefined) {
    const r = positiveInt.safeParse(confirmationsText);
    if (r.success) confirmations = r.data;
    else problems.push({ variable: names.confirmations, message: "must be a positive whole number" });
  }
  let sweepThreshold = 0n;
  const threshold = parseAmount(env[names.sweepThreshold] ?? definition.defaultSweepThreshold);
  if (threshold.ok) sweepThreshold = threshold.units;
  else problems.push({ variable: names.sweepThreshold, message: `${threshold.message} (token units)` });
  const sweepMaxCost = parseSweepMaxCost(env, names, problems);
  const sweepBatch = parseSweepBatch(env[names.sweepEip7702], definition, names.sweepEip7702, problems);
  const options: Record<string, number> = {};
  for (const option of definition.options ?? []) {
    const text = env[option.variable];
    if (text === undefined) {
      options[option.key] = option.default;
      continue;
    }
    const r = positiveInt.safeParse(text);
    if (r.success) options[option.key] = r.data;
    else problems.push({ variable: option.variable, message: "must be a positive whole number" });
  }
  return {
    confirmations,
    sweepThreshold,
    sweepMaxCost,
    sweepBatch,
    production: parseEnvironment(env, definition, "production", problems),
    sandbox: parseEnvironment(env, definition, "sandbox", problems),
    options,
  };
}

function parseSweepBatch(
  text: string | undefined,
  definition: NetworkDefinition,
  variable: string,
  problems: Problem[],
): boolean {
  const supported = definition.eip7702 === true;
  if (text === undefined) return supported;
  if (text !== "true" && text !== "false") {
    problems.push({ variable, message: "must be true or false" });
    return false;
  }
  if (text === "true" && !supported) {
    problems.push({
      variable,
      message: `${definition.name} does not run EIP-7702: its sweeps keep the gas top-ups`,
    });
    return false;
  }
  return text === "true";
}

function parseSweepMaxCost(
  env: Readonly<Record<string, string>>,
  names: ReturnType<typeof networkVariables>,
  problems: Problem[],
): SweepMaxCost | undefined {
  const percentText = env[names.sweepMaxCostPercent];
  const priceText = env[names.nativePrice];
  if (percentText === undefined) return undefined;
  const percent = z.coerce.number().positive().max(100).safeParse(percentText);
  if (!percent.success || Math.round(percent.data * 100) < 1) {
    problems.push({
      variable: names.sweepMaxCostPercent,
      message: "must be a share in percent, above 0 and at most 100 (e.g. 2.5)",
    });
    return undefined;
  }
  if (priceText === undefined) {
    problems.push({
      variable: names.nativePrice,
      message: `set with ${names.sweepMaxCostPercent}: what one native coin is worth in token units (e.g. 0.25)`,
    });
    return undefined;
  }
  const price = parseAmount(priceText);
  if (!price.ok || price.units === 0n) {
    problems.push({
      variable: names.nativePrice,
      message: `${price.ok ? "must be above 0" : price.message} (token units per native coin)`,
    });
    return undefined;
  }
  return { basisPoints: Math.round(percent.data * 100), nativePrice: price.units };
}

function parseEnvironment(
  env: Readonly<Record<string, string>>,
  definition: NetworkDefinition,
  environment: Environment,
  problems: Problem[],
): NetworkEnvironmentSettings {
  const names = networkVariables(definition, environment);
  const urls: string[] = [];
  const single = env[names.endpoint];
  if (single !== undefined) {
    if (url.safeParse(single).success) urls.push(single);
    else problems.push({ variable: names.endpoint, message: "Invalid url" });
  }
  const list = env[names.endpoints];
  if (list !== undefined) {
    const entries = list
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (entries.length === 0)
      problems.push({ variable: names.endpoints, message: "must list at least one URL" });
    for (const u of entries) {
      if (!url.safeParse(u).success)
        problems.push({ variable: names.endpoints, message: `"${u}" is not a URL` });
      else if (!urls.includes(u)) urls.push(u);
    }
  }
  const contracts: Record<string, string | undefined> = {};
  for (const listing of definition.tokens) {
    contracts[listing.token] =
      env[names.contract(listing.token)] ??
      (environment === "production" ? listing.defaultContract : undefined);
  }
  return {
    urls,
    contracts,
    cold: parseCold(env, definition, names, problems),
    rental: parseRental(env, definition, environment, names, problems),
  };
}

/** The rental provider's four variables: all or none, and only on a network with TRON's resources. */
function parseRental(
  env: Readonly<Record<string, string>>,
  definition: NetworkDefinition,
  environment: Environment,
  names: ReturnType<typeof networkVariables>,
  problems: Problem[],
): RentalSettings | undefined {
  const parts = ["URL", "API_KEY", "API_SECRET", "MAX_SUN_PER_ENERGY"] as const;
  const given = parts.filter((part) => env[names.rental(part)] !== undefined);
  if (given.length === 0) return undefined;
  if (definition.family !== "tron") {
    problems.push({
      variable: names.rental(given[0]!),
      message: "energy rental exists on TRON networks only",
    });
    return undefined;
  }
  const missing = parts.filter((part) => !env[names.rental(part)]);
  if (missing.length > 0) {
    for (const part of missing)
      problems.push({ variable: names.rental(part), message: `set with ${names.rental(given[0]!)}` });
    return undefined;
  }
  const endpoint = env[names.rental("URL")]!;
  // Production orders carry the API key and spend the prepaid balance: TLS only. The sandbox's
  // may be a local fake.
  const scheme = environment === "production" ? /^https:\/\// : /^https?:\/\//;
  if (!scheme.test(endpoint) || !url.safeParse(endpoint).success) {
    problems.push({
      variable: names.rental("URL"),
      message: environment === "production" ? "must be an https URL" : "must be an http(s) URL",
    });
    return undefined;
  }
  // TRON's energy has never cost more than 420 sun to burn: a cap above 1,000 is a typo.
  const max = z.coerce.number().positive().max(1_000).safeParse(env[names.rental("MAX_SUN_PER_ENERGY")]);
  if (!max.success) {
    problems.push({
      variable: names.rental("MAX_SUN_PER_ENERGY"),
      message: "must be a positive number of sun (at most 1000)",
    });
    return undefined;
  }
  return {
    url: endpoint,
    apiKey: env[names.rental("API_KEY")]!,
    apiSecret: env[names.rental("API_SECRET")]!,
    maxSunPerEnergy: max.data,
  };
}

function parseCold(
  env: Readonly<Record<string, string>>,
  definition: NetworkDefinition,
  names: ReturnType<typeof networkVariables>,
  problems: Problem[],
): ColdWallet | undefined {
  const max = env[names.hotWalletMax];
  const address = env[names.coldWallet];
  if (max === undefined && address === undefined) return undefined;
  if (max === undefined || address === undefined) {
    problems.push({
      variable: max === undefined ? names.hotWalletMax : names.coldWallet,
      message: `set with ${max === undefined ? names.coldWallet : names.hotWalletMax}`,
    });
    return undefined;
  }
  const shape = ADDRESS_SHAPE[definition.family];
  if (!shape.re.test(address)) {
    problems.push({ variable: names.coldWallet, message: shape.message });
    return undefined;
  }
  const r = parseAmount(max);
  if (!r.ok) {
    problems.push({ variable: names.hotWalletMax, message: `${r.message} (token units)` });
    return undefined;
  }
  return { max: r.units, address };
}

/** The settings of a currency type's network. */
export function networkSettingsOf(chains: ChainsConfig, currencyType: CurrencyType): NetworkSettings {
  const network = currencyOf(currencyType).network;
  const settings = chains.networks[network];
  if (!settings) throw new Error(`No settings for network ${network}.`);
  return settings;
}

/** The configured contract of a currency type in an environment (undefined: not configured). */
export function configuredContract(
  chains: ChainsConfig,
  currencyType: CurrencyType,
  environment: Environment,
): string | undefined {
  const { token } = currencyOf(currencyType);
  return networkSettingsOf(chains, currencyType)[environment].contracts[token];
}

/** Cold-wallet forwarding of a currency type in an environment (its network's), or undefined. */
export function coldWalletOf(
  chains: ChainsConfig,
  currencyType: CurrencyType,
  environment: Environment,
): ColdWallet | undefined {
  return networkSettingsOf(chains, currencyType)[environment].cold;
}
