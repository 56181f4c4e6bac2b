import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { AddressCodec } from "./module.js";
import { networkChain } from "./networks.js";

/** The address codec of `network` (its network module's: EIP-55 on every EVM network, base58check on TRON). */
export function addressCodec(network: CurrencyType): AddressCodec {
  return networkChain(currencyOf(network).network).address;
}

/** Whether `s` is a valid address of the network as a user would type it. */
export function validateAddress(network: CurrencyType, s: string): boolean {
  return addressCodec(network).validate(s);
}

/** The canonical spelling stablegate stores and compares (EIP-55 / base58check); throws `InvalidAddressError`. */
export function normalizeAddress(network: CurrencyType, s: string): string {
  return addressCodec(network).normalize(s);
}

/** The address of a secp256k1 public key on the network (both hash the key once, the same way). */
export function addressFromPublicKey(network: CurrencyType, publicKey: Uint8Array): string {
  return addressCodec(network).fromPublicKey(publicKey);
}
