import { type ChainFamily, type CurrencyType, chainScale, currencyOf } from "../domain/currency.js";

interface PaymentUriInput {
  network: CurrencyType;
  address: string;
  /** Amount still due, API base units. */
  units: bigint;
  /** The currency type's token contract in this environment, when there is one. */
  tokenContract: string | undefined;
}

/**
 * The text of the payment QR code (docs/decisions/deposits-page.md), by the network's family:
 * - EVM networks with a known token contract: an EIP-681 token transfer
 *   `ethereum:<token>[@<chainId>]/transfer?address=<to>&uint256=<on-chain units>`, which MetaMask,
 *   Trust Wallet, Rainbow, Coinbase Wallet and most EVM wallets read (amount and token prefilled).
 *   The chain id (from the registry) is added when the contract is the registry's mainnet contract
 *   of the currency type; without it EIP-681 says the wallet keeps its current network. The amount
 *   is in the token's own decimals (10^12 × the API's units for an 18-decimal token).
 * - TRON: the bare address. TRON has no payment-URI standard; TronLink, Trust Wallet, Binance,
 *   imToken and exchanges all read a bare base58 address, while the `tron:` forms some wallets emit
 *   are refused by others. The page shows the amount next to the code.
 * - Without a contract (the sandbox simulator has no token contract): the bare address too.
 */
export function paymentUri(input: PaymentUriInput): string {
  return URI_OF_FAMILY[currencyOf(input.network).definition.family](input);
}

const URI_OF_FAMILY: Readonly<Record<ChainFamily, (input: PaymentUriInput) => string>> = {
  evm(input) {
    if (!input.tokenContract || input.units <= 0n) return input.address;
    const currency = currencyOf(input.network);
    const known = input.tokenContract.toLowerCase() === currency.defaultContract.toLowerCase();
    const chainId = known ? currency.definition.chainId : null;
    const target = chainId === null ? input.tokenContract : `${input.tokenContract}@${chainId}`;
    const onChain = input.units * chainScale(input.network);
    return `ethereum:${target}/transfer?address=${input.address}&uint256=${onChain.toString()}`;
  },
  tron: (input) => input.address,
};

/** Whether the QR code carries the amount (then it goes stale when a partial payment arrives). */
export function uriCarriesAmount(uri: string): boolean {
  return uri.includes("uint256=");
}
