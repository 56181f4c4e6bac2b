import { type ChainFamily, type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { ChainRegistry } from "./registry.js";

/** One enabled currency type as `GET /api/v1/public/currencies` lists it. */
export interface CurrencyListing {
  currencyType: CurrencyType;
  token: string;
  /** The network's name (`BEP20`); a transaction's `network` field carries the currency type. */
  network: string;
  /** Its human name ("BNB Smart Chain (BEP-20)"), as the hosted page shows it. */
  networkName: string;
  /** Which address format it uses: `evm` (0x…, the same on every EVM network) or `tron` (T…). */
  chain: ChainFamily;
  /** EIP-155 chain id of the network (null on TRON). */
  chainId: number | null;
  /** The token contract in this environment; null on the sandbox simulator (it has none) or when unconfigured. */
  contract: string | null;
  /** Confirmations a deposit needs here. */
  confirmations: number;
  /** The token contract's decimals (amounts at the API keep 6). */
  decimals: number;
}

/**
 * The currency types a deployment serves in one environment (`CURRENCY_TYPES`), in the registry's
 * order, with what a wallet or an integration needs to pay them.
 */
export function listCurrencies(
  chains: Pick<ChainRegistry, "enabledCurrencyTypes" | "entry" | "requiredConfirmations">,
  environment: Environment,
): CurrencyListing[] {
  return chains.enabledCurrencyTypes().map((currencyType) => {
    const c = currencyOf(currencyType);
    const entry = chains.entry(currencyType, environment);
    return {
      currencyType,
      token: c.token,
      network: c.network,
      networkName: c.definition.label,
      chain: c.definition.family,
      chainId: c.definition.chainId,
      contract: entry.status === "available" ? entry.contract : null,
      confirmations: chains.requiredConfirmations(currencyType, environment),
      decimals: c.decimals,
    };
  });
}
