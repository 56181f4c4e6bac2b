import { type ChainFamily, type CurrencyType, currencyOf, testFailureAddress } from "./currency.js";
import type { Environment } from "./environment.js";

/**
 * Destinations no withdrawal or payout may name (issue #34, finding 11): addresses where tokens are
 * destroyed, per network. EVM: the zero address and the conventional burn address `0x…dEaD`
 * (compared case-insensitively: EIP-55 is a checksum over the same twenty bytes). TRON: its zero
 * address, the base58check of `0x41` followed by twenty zero bytes. Pure: the callers (the
 * withdrawals feature at request time, the signer's policy) compare the canonical address.
 */
const BURN_ADDRESSES: Readonly<Record<ChainFamily, readonly string[]>> = {
  evm: ["0x0000000000000000000000000000000000000000", "0x000000000000000000000000000000000000dead"],
  tron: ["T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"],
};

/** How each family compares addresses: EVM case-insensitively (EIP-55 is a checksum), TRON exactly. */
const COMPARABLE: Readonly<Record<ChainFamily, (address: string) => string>> = {
  evm: (a) => a.toLowerCase(),
  tron: (a) => a,
};

/** Whether `address` (on `network`) destroys what it receives. */
export function isBurnAddress(network: CurrencyType, address: string): boolean {
  const family = currencyOf(network).definition.family;
  return BURN_ADDRESSES[family].includes(COMPARABLE[family](address));
}

/**
 * A burn address a withdrawal or payout must not name in `environment`: every burn address, except
 * in the sandbox the network's test failure address (docs/merchants/sandbox.md#test-failure-addresses: the simulator fails a transfer
 * to it on-chain, so merchants can test the `failed` path; nothing is destroyed).
 */
export function isRefusedBurnAddress(
  network: CurrencyType,
  environment: Environment,
  address: string,
): boolean {
  if (!isBurnAddress(network, address)) return false;
  const testFailure = testFailureAddress(network);
  const same = COMPARABLE[currencyOf(network).definition.family];
  const isTestFailure = same(address) === same(testFailure);
  return !(environment === "sandbox" && isTestFailure);
}
