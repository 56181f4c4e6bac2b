import type { ChainFamily } from "../api/types";

/**
 * The shape of a wallet address per chain family (an EVM address is the same on every EVM
 * network), checked in the form before the e-mailed code is asked for (issue #35). The server
 * checks the checksum too (TRON base58check, EVM EIP-55: docs/api-reference.md#createwithdrawalrequest);
 * this only catches what is plainly the wrong network or a typo in the length.
 */
const SHAPES = {
  tron: {
    pattern: /^T[1-9A-HJ-NP-Za-km-z]{33}$/,
    rule: "A TRON address starts with T and has 34 characters (base58: no 0, O, I or l).",
  },
  evm: {
    pattern: /^0x[0-9a-fA-F]{40}$/,
    rule: "An EVM address (Ethereum, BNB Smart Chain, Polygon, Arbitrum, Base…) is 0x followed by 40 hexadecimal characters.",
  },
} satisfies Record<ChainFamily, { pattern: RegExp; rule: string }>;

/** Why `address` can't be an address of the `chain` family, or null when it has the right shape. */
export function addressProblem(chain: ChainFamily, address: string): string | null {
  if (address === "") return "Enter the recipient's wallet address.";
  const shape = SHAPES[chain];
  return shape.pattern.test(address) ? null : shape.rule;
}
