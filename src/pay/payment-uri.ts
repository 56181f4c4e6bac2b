import { type ChainFamily, type CurrencyType, chainScale, currencyOf } from "../domain/currency.js";
import { formatUnits } from "../domain/money.js";

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
 * - TRON: the bare address. No TRON standard defines a payment URI (TIP-17, which the issue named,
 *   is the Adaptive Energy Limit Model); TronLink documents only its own `tronlinkoutside://`
 *   deep link (for whitelisted DApps), and the `tron:` forms some wallets emit are refused by
 *   others. Every TRON wallet and exchange reads a bare base58 address; the page shows the amount
 *   next to the code, and offers the one documented link that carries token and amount
 *   (`walletLink`, Trust Wallet) as a link beside it.
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

/** The "open in wallet" link under the QR code, and which label it takes. */
export interface WalletLink {
  href: string;
  label: "openInWallet" | "openInTrustWallet";
}

/** SLIP-44 coin type of TRON: the `c195` of Trust Wallet's Universal Asset ID. */
const TRON_SLIP44 = 195;

/**
 * A link that opens a wallet app with the payment filled in, or null when there is none worth
 * offering (no token contract: the sandbox simulator; nothing left to pay):
 * - EVM: the EIP-681 URI of the QR code itself (`ethereum:` links open the installed wallet);
 * - TRON: Trust Wallet's documented send link
 *   `https://link.trustwallet.com/send?asset=c195_t<contract>&address=<to>&amount=<decimal>`
 *   (developer.trustwallet.com "Deep Linking" → Send Payment, with the Universal Asset ID
 *   `c{coin}_t{token}`); the amount in the token's units as a decimal, as in its example. It opens
 *   Trust Wallet when installed, else Trust Wallet's download page — hence the explicit label.
 */
export function walletLink(input: PaymentUriInput): WalletLink | null {
  if (!input.tokenContract || input.units <= 0n) return null;
  if (currencyOf(input.network).definition.family === "evm")
    return { href: paymentUri(input), label: "openInWallet" };
  const query = new URLSearchParams({
    asset: `c${TRON_SLIP44}_t${input.tokenContract}`,
    address: input.address,
    amount: formatUnits(input.units),
  });
  return { href: `https://link.trustwallet.com/send?${query.toString()}`, label: "openInTrustWallet" };
}
