import type { CurrencyType } from "../domain/currency.js";
import type { AddressCodec } from "./module.js";
import { NETWORK_CHAINS } from "./networks.js";

const CODECS = new Map<CurrencyType, AddressCodec>(NETWORK_CHAINS.map((m) => [m.network, m.address]));

/** The address codec of `network` (its network module's). */
export function addressCodec(network: CurrencyType): AddressCodec {
  const codec = CODECS.get(network);
  if (!codec) throw new Error(`No chain module serves ${network}.`);
  return codec;
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
