/** Currency types (CONTRACT §0): USDT on TRON and on Ethereum, both 6 decimals. `network` carries the same value. */
export const CURRENCY_TYPES = ["USDT-TRC20", "USDT-ERC20"] as const;
export type CurrencyType = (typeof CURRENCY_TYPES)[number];

export function isCurrencyType(v: unknown): v is CurrencyType {
  return v === "USDT-TRC20" || v === "USDT-ERC20";
}
