/** The networks stablegate settles on (CONTRACT §0). `network` carries the same value as `currencyType`. */
export const NETWORKS = ["USDT-TRC20", "USDT-ERC20"] as const;
export type Network = (typeof NETWORKS)[number];

/** Both USDT tokens have 6 decimals: 1 USDT = 1_000_000 base units. */
export const TOKEN_DECIMALS = 6;

export function isNetwork(v: unknown): v is Network {
  return v === "USDT-TRC20" || v === "USDT-ERC20";
}

/**
 * Test failure addresses (CONTRACT §4.1): like test card numbers, an outgoing transfer to one of these
 * fails on-chain in the sandbox simulator.
 */
export const TEST_FAILURE_ADDRESSES: Readonly<Record<Network, string>> = {
  "USDT-TRC20": "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
  "USDT-ERC20": "0x000000000000000000000000000000000000dEaD",
};
