import type { CurrencyType } from "../api/types";

/**
 * The shape of a wallet address per network, checked in the form before the e-mailed code is asked
 * for (issue #35). The server checks the checksum too (TRON base58check, EVM EIP-55:
 * docs/api-reference.md#createwithdrawalrequest); this only catches what is plainly the wrong network or a typo in the length.
 */
const SHAPES: Record<CurrencyType, { pattern: RegExp; rule: string }> = {
  "USDT-TRC20": {
    pattern: /^T[1-9A-HJ-NP-Za-km-z]{33}$/,
    rule: "A TRON address starts with T and has 34 characters (base58: no 0, O, I or l).",
  },
  "USDT-ERC20": {
    pattern: /^0x[0-9a-fA-F]{40}$/,
    rule: "An Ethereum address is 0x followed by 40 hexadecimal characters.",
  },
};

/** Why `address` can't be an address of `currencyType`'s network, or null when it has the right shape. */
export function addressProblem(currencyType: CurrencyType, address: string): string | null {
  const shape = SHAPES[currencyType];
  if (address === "") return "Enter the recipient's wallet address.";
  return shape.pattern.test(address) ? null : shape.rule;
}
