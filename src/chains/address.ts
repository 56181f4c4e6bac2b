import { getAddress, toHex } from "viem";
import type { CurrencyType } from "../domain/currency.js";
import { accountBytesFromPublicKey, isEvmAddress, normalizeEvmAddress } from "./evm/address.js";
import { isTronAddress, normalizeTronAddress, tronAddressFromBytes } from "./tron/address.js";

/** Whether `s` is a valid address of the network as a user would type it. */
export function validateAddress(network: CurrencyType, s: string): boolean {
  return network === "USDT-ERC20" ? isEvmAddress(s) : isTronAddress(s);
}

/** The canonical spelling stablegate stores and compares (EIP-55 / base58check); throws `InvalidAddressError`. */
export function normalizeAddress(network: CurrencyType, s: string): string {
  return network === "USDT-ERC20" ? normalizeEvmAddress(s) : normalizeTronAddress(s);
}

/** The address of a secp256k1 public key on the network (both hash the key once, the same way). */
export function addressFromPublicKey(network: CurrencyType, publicKey: Uint8Array): string {
  const account = accountBytesFromPublicKey(publicKey);
  return network === "USDT-ERC20" ? getAddress(toHex(account)) : tronAddressFromBytes(account);
}
