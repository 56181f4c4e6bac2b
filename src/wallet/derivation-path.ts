import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/** Reserved address indexes of every (network, environment) branch. */
export const HOT_WALLET_INDEX = 0;
export const GAS_TANK_INDEX = 1;
/** Customer deposit addresses start here; 2..99 stay free for future system wallets. */
export const FIRST_DEPOSIT_INDEX = 100;

/** Largest non-hardened BIP32 child index. */
export const MAX_ADDRESS_INDEX = 0x7fff_ffff;

/** One BIP44 account per environment, so that sandbox keys can never sign for production funds. */
export const ENVIRONMENT_ACCOUNT: Readonly<Record<Environment, number>> = { production: 0, sandbox: 1 };

/**
 * The BIP44 account of a currency type in an environment: `2 × accountSlot + environment` on its
 * network's SLIP-44 coin type (60 for every EVM network, 195 TRON). USDT-ERC20 and USDT-TRC20 have
 * slot 0 (the accounts they always had); each other currency type its own slot, so that no two
 * currency types share an address (nor a hot wallet's nonces on one chain).
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

/** `m/44'/<coin>'/<account>'/0/<index>`: BIP44 external chain. */
export function derivationPath(network: CurrencyType, environment: Environment, index: number): string {
  assertAddressIndex(index);
  return `${accountPath(network, environment)}/0/${index}`;
}
