/**
 * Currency types (docs/api-reference.md#currency-types): USDT on TRON and on Ethereum, both 6 decimals. The one type for a
 * currency and the network it settles on: a transaction's `network` carries the same value.
 */
export const CURRENCY_TYPES = ["USDT-TRC20", "USDT-ERC20"] as const;
export type CurrencyType = (typeof CURRENCY_TYPES)[number];

export function isCurrencyType(v: unknown): v is CurrencyType {
  return v === "USDT-TRC20" || v === "USDT-ERC20";
}

/**
 * Test failure addresses (docs/merchants/sandbox.md#test-failure-addresses): like test card numbers, an outgoing transfer to one of these
 * fails on-chain in the sandbox simulator.
 */
export const TEST_FAILURE_ADDRESSES: Readonly<Record<CurrencyType, string>> = {
  "USDT-TRC20": "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
  "USDT-ERC20": "0x000000000000000000000000000000000000dEaD",
};
