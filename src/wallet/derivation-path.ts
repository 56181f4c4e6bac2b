import { type CurrencyType, currencyOf, depositAccountOf, FIRST_DEPOSIT_INDEX } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

export { depositAccountOf, FIRST_DEPOSIT_INDEX };

/** Reserved address indexes of every (network, environment) branch. */
export const HOT_WALLET_INDEX = 0;
export const GAS_TANK_INDEX = 1;
/**
 * TRON's resource account (issue #38): the TRX the operator sends it is staked for energy and
 * bandwidth, which it delegates to a sending address for one transfer and takes back.
 */
export const RESOURCE_ACCOUNT_INDEX = 2;

/** Largest non-hardened BIP32 child index. */
export const MAX_ADDRESS_INDEX = 0x7fff_ffff;

/** One BIP44 account per environment, so that sandbox keys can never sign for production funds. */
export const ENVIRONMENT_ACCOUNT: Readonly<Record<Environment, number>> = { production: 0, sandbox: 1 };

/**
 * The BIP44 account of a currency type in an environment: `2 × accountSlot + environment` on its
 * network's SLIP-44 coin type (60 for every EVM network, 195 TRON). USDT-ERC20 and USDT-TRC20 have
 * slot 0 (the accounts they always had); each other currency type its own slot, so that no two
 * currency types share a system wallet (nor a hot wallet's nonces on one chain). Deposit addresses
 * (indexes from `FIRST_DEPOSIT_INDEX`) are the exception: every currency type of a coin type takes
 * them from slot 0's account and its one index sequence (`keyAccountOf`), so an EVM deposit address
 * is one key on every EVM network and a payment on the wrong network can be credited and swept.
 */
export function accountNumber(network: CurrencyType, environment: Environment): number {
  return 2 * currencyOf(network).accountSlot + ENVIRONMENT_ACCOUNT[environment];
}

export function assertAddressIndex(index: number): void {
  if (!Number.isSafeInteger(index) || index < 0 || index > MAX_ADDRESS_INDEX) {
    throw new RangeError(`Address index must be an integer in 0..${MAX_ADDRESS_INDEX}, got ${index}.`);
  }
}

/** `m/44'/<coin>'/<account>'`: the hardened account node of a (network, environment). */
export function accountPath(network: CurrencyType, environment: Environment): string {
  return `m/44'/${currencyOf(network).definition.coinType}'/${accountNumber(network, environment)}'`;
}

/** The currency type whose account derives index `index` of `network` (see `depositAccountOf`). */
export function keyAccountOf(network: CurrencyType, index: number): CurrencyType {
  return index >= FIRST_DEPOSIT_INDEX ? depositAccountOf(network) : network;
}

/** `m/44'/<coin>'/<account>'/0/<index>`: BIP44 external chain (the account: `keyAccountOf`). */
export function derivationPath(network: CurrencyType, environment: Environment, index: number): string {
  assertAddressIndex(index);
  return `${accountPath(keyAccountOf(network, index), environment)}/0/${index}`;
}
