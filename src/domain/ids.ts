import { randomBytes } from "node:crypto";

/**
 * Prefixed, unguessable identifiers (`mer_…`, `key_…`, `tx_…`): readable in logs and support
 * tickets. 16 random bytes (128 bits) in base62.
 */
export type IdPrefix =
  | "mer"
  | "key"
  | "req"
  | "tx"
  | "whe"
  | "adm"
  | "usr"
  | "ses"
  | "otp"
  | "mail"
  | "obs"
  | "wal";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function base62(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(Math.ceil((bytes.length * 8) / Math.log2(62)), "0");
}

export function newId(prefix: IdPrefix, bytes = 16): string {
  return `${prefix}_${base62(randomBytes(bytes))}`;
}
