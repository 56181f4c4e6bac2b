import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { createBase58check } from "@scure/base";
import { getAddress } from "viem";
import { InvalidAddressError } from "../errors.js";
import type { EvmAddress } from "../evm/address.js";

/** Every TRON mainnet account address is 0x41 followed by the same 20 bytes an EVM address has. */
export const TRON_ADDRESS_PREFIX = 0x41;

/** Base58 with a 4-byte double-sha256 checksum (what TRON, like Bitcoin, uses). */
const base58check = createBase58check(sha256);

/** Base58check of 0x41 + the 20 account bytes (a 34-character string starting with `T`). */
export function tronAddressFromBytes(account: Uint8Array): string {
  if (account.length !== 20) throw new Error("A TRON account is 20 bytes.");
  const payload = new Uint8Array(21);
  payload[0] = TRON_ADDRESS_PREFIX;
  payload.set(account, 1);
  return base58check.encode(payload);
}

/** The 20 account bytes of a base58check TRON address, or null when it is not one. */
function decode(s: string): Uint8Array | null {
  if (typeof s !== "string" || s.length !== 34) return null;
  let payload: Uint8Array;
  try {
    payload = base58check.decode(s);
  } catch {
    return null;
  }
  if (payload.length !== 21 || payload[0] !== TRON_ADDRESS_PREFIX) return null;
  return payload.slice(1);
}

/** A base58check address with the 0x41 prefix and a valid checksum. Base58 is case-sensitive. */
export function isTronAddress(s: string): boolean {
  return decode(s) !== null;
}

/** TRON base58 has one spelling, so normalising is validating; throws `InvalidAddressError`. */
export function normalizeTronAddress(s: string): string {
  if (!isTronAddress(s)) throw new InvalidAddressError("USDT-TRC20", s);
  return s;
}

export function tronAddressToBytes(s: string): Uint8Array {
  const account = decode(s);
  if (!account) throw new InvalidAddressError("USDT-TRC20", s);
  return account;
}

/** The node's hex form: `41` + 40 hex digits (lowercase). */
export function tronAddressToHex(s: string): string {
  return "41" + bytesToHex(tronAddressToBytes(s));
}

/**
 * Base58 from the hex forms TRON nodes answer with: `41` + 40 hex (addresses in API responses),
 * or 40 hex / `0x` + 40 hex (a log's contract address, an ABI-decoded address).
 */
export function tronAddressFromHex(hex: string): string {
  const h = hex.startsWith("0x") ? hex.slice(2) : hex;
  if (/^41[0-9a-fA-F]{40}$/.test(h)) return tronAddressFromBytes(hexToBytes(h.slice(2)));
  if (/^[0-9a-fA-F]{40}$/.test(h)) return tronAddressFromBytes(hexToBytes(h));
  throw new InvalidAddressError("USDT-TRC20", hex);
}

/** The same account as an EVM address (used by the emulator and for ABI encoding). */
export function tronAddressToEvm(s: string): EvmAddress {
  return getAddress("0x" + bytesToHex(tronAddressToBytes(s)));
}
