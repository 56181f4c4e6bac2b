import type { CurrencyType } from "../domain/currency.js";

/**
 * The text of the payment QR code (docs/decisions/deposits-page.md):
 * - USDT-ERC20 with a known token contract: an EIP-681 token transfer
 *   `ethereum:<token>[@<chainId>]/transfer?address=<to>&uint256=<baseUnits>`, which MetaMask, Trust
 *   Wallet, Rainbow, Coinbase Wallet and most EVM wallets read (amount and token prefilled). The chain
 *   id is added only when the contract is a well-known one (mainnet USDT → 1); without it EIP-681 says
 *   the wallet keeps its current network.
 * - USDT-TRC20: the bare address. TRON has no payment-URI standard; TronLink, Trust Wallet, Binance,
 *   imToken and exchanges all read a bare base58 address, while the `tron:` forms some wallets emit
 *   are refused by others. The page shows the amount next to the code.
 * - ERC20 without a contract (the sandbox simulator has no token contract): the bare address too.
 */
export function paymentUri(input: {
  network: CurrencyType;
  address: string;
  /** Amount still due, base units. */
  units: bigint;
  /** The network's USDT contract in this environment, when there is one. */
  tokenContract: string | undefined;
}): string {
  if (input.network === "USDT-ERC20" && input.tokenContract && input.units > 0n) {
    const chainId = KNOWN_CHAIN_IDS[input.tokenContract.toLowerCase()];
    const target = chainId === undefined ? input.tokenContract : `${input.tokenContract}@${chainId}`;
    return `ethereum:${target}/transfer?address=${input.address}&uint256=${input.units.toString()}`;
  }
  return input.address;
}

/** Whether the QR code carries the amount (then it goes stale when a partial payment arrives). */
export function uriCarriesAmount(uri: string): boolean {
  return uri.includes("uint256=");
}

/** Chain ids of well-known USDT contracts (lower-case address → EIP-155 chain id). */
const KNOWN_CHAIN_IDS: Readonly<Record<string, number>> = {
  // Tether USD on Ethereum mainnet (the default USDT_ERC20_CONTRACT).
  "0xdac17f958d2ee523a2206206994597c13d831ec7": 1,
};
