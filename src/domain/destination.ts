import { type CurrencyType, TEST_FAILURE_ADDRESSES } from "./currency.js";
import type { Environment } from "./environment.js";

/**
 * Destinations no withdrawal or payout may name (issue #34, finding 11): addresses where tokens are
 * destroyed, per network. EVM: the zero address and the conventional burn address `0x…dEaD`
 * (compared case-insensitively: EIP-55 is a checksum over the same twenty bytes). TRON: its zero
 * address, the base58check of `0x41` followed by twenty zero bytes. Pure: the callers (the
 * withdrawals feature at request time, the signer's policy) compare the canonical address.
 */
const BURN_ADDRESSES: Readonly<Record<CurrencyType, readonly string[]>> = {
  "USDT-ERC20": ["0x0000000000000000000000000000000000000000", "0x000000000000000000000000000000000000dead"],
  "USDT-TRC20": ["T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"],
};

/** Whether `address` (on `network`) destroys what it receives. */
export function isBurnAddress(network: CurrencyType, address: string): boolean {
  const list = BURN_ADDRESSES[network];
  return network === "USDT-ERC20" ? list.includes(address.toLowerCase()) : list.includes(address);
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
  const testFailure = TEST_FAILURE_ADDRESSES[network];
  const isTestFailure =
    network === "USDT-ERC20" ? address.toLowerCase() === testFailure.toLowerCase() : address === testFailure;
  return !(environment === "sandbox" && isTestFailure);
}
