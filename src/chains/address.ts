import { CURRENCY_TYPES, type CurrencyType, currencyOf, sameKeySpace } from "../domain/currency.js";
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

/**
 * `address` of `network` spelled in every key space's encoding, each with the currency types of that
 * space: a TRON address and an EVM address of the same 20 account bytes are one secp256k1 key, so a
 * key of ours is ours in either spelling (what the own-address checks of destinations compare; a
 * withdrawal on TRON to the TRON spelling of an EVM deposit key would strand the coins unwatched).
 * The first entry is `network`'s own space and spelling. Throws `InvalidAddressError` for an address
 * that is not one of `network`'s.
 */
export function ownershipSpellings(
  network: CurrencyType,
  address: string,
): { networks: CurrencyType[]; address: string }[] {
  const own = normalizeAddress(network, address);
  const account = addressCodec(network).toAccountBytes(own);
  const spaces: { networks: CurrencyType[]; address: string }[] = [
    { networks: sameKeySpace(network), address: own },
  ];
  for (const c of CURRENCY_TYPES) {
    if (spaces.some((s) => s.networks.includes(c))) continue;
    spaces.push({ networks: sameKeySpace(c), address: addressCodec(c).fromAccountBytes(account) });
  }
  return spaces;
}
