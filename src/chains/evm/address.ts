import { secp256k1 } from "@noble/curves/secp256k1.js";
import { getAddress, isAddress, keccak256, toHex } from "viem";
import { InvalidAddressError } from "../errors.js";

export type EvmAddress = `0x${string}`;

/**
 * `0x` + 40 hex digits. Mixed case must be a valid EIP-55 checksum; all-lowercase is accepted
 * (it carries no checksum), as wallets and exchanges do.
 */
export function isEvmAddress(s: string): boolean {
  return isAddress(s, { strict: true });
}

/** The EIP-55 checksummed form; throws `InvalidAddressError` for anything `isEvmAddress` rejects. */
export function normalizeEvmAddress(s: string): EvmAddress {
  if (!isEvmAddress(s)) throw new InvalidAddressError("USDT-ERC20", s);
  return getAddress(s);
}

/** Address of a secp256k1 public key (compressed or not): keccak256 of the uncompressed point, last 20 bytes. */
export function evmAddressFromPublicKey(publicKey: Uint8Array): EvmAddress {
  return getAddress(toHex(accountBytesFromPublicKey(publicKey)));
}

/**
 * The 20 account bytes of a secp256k1 public key: the last 20 bytes of keccak256 over the
 * uncompressed point's x‖y. An uncompressed key (65 bytes, 0x04…) is hashed as it is (no curve
 * check: callers pass points they computed); a compressed one is decompressed first.
 */
export function accountBytesFromPublicKey(publicKey: Uint8Array): Uint8Array {
  const uncompressed =
    publicKey.length === 65 && publicKey[0] === 0x04
      ? publicKey
      : secp256k1.Point.fromBytes(publicKey).toBytes(false);
  return keccak256(uncompressed.subarray(1), "bytes").subarray(12);
}
