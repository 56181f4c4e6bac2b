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
  | "wal"
  | "inv"
  /** A payment link (issue #41). */
  | "pl";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * Base62 of a big-endian unsigned integer, left-padded with "0" to the length the byte count needs.
 * Long division over 32-bit words in plain numbers (each step stays below 62·2³² < 2⁵³, so exact):
 * a few times cheaper than BigInt division, and ids are made on every request.
 */
export function base62(bytes: Uint8Array): string {
  const words: number[] = [];
  let word = 0;
  let filled = 0;
  // Leading zero bytes up to a whole word do not change the value.
  for (let i = -((4 - (bytes.length % 4)) % 4); i < bytes.length; i++) {
    word = word * 256 + (i < 0 ? 0 : (bytes[i] as number));
    if (++filled === 4) {
      words.push(word);
      word = 0;
      filled = 0;
    }
  }
  const digits: string[] = [];
  let start = 0;
  while (start < words.length && words[start] === 0) start++;
  while (start < words.length) {
    let rem = 0;
    for (let i = start; i < words.length; i++) {
      const cur = rem * 4294967296 + (words[i] as number);
      const q = Math.floor(cur / 62);
      rem = cur - q * 62;
      words[i] = q;
    }
    digits.push(ALPHABET[rem] as string);
    while (start < words.length && words[start] === 0) start++;
  }
  return digits
    .reverse()
    .join("")
    .padStart(Math.ceil((bytes.length * 8) / Math.log2(62)), "0");
}

/**
 * Random bytes for ids, drawn from a 4 KiB block of the CSPRNG refilled when used up (as Node's
 * `randomUUID` does): one OpenSSL call per 256 ids instead of one per id. A block is never reused.
 */
const RANDOM_BLOCK = 4096;
let block = Buffer.alloc(0);
let offset = 0;
function idBytes(n: number): Uint8Array {
  if (n > RANDOM_BLOCK / 16) return randomBytes(n);
  if (offset + n > block.length) {
    block = randomBytes(RANDOM_BLOCK);
    offset = 0;
  }
  const out = block.subarray(offset, offset + n);
  offset += n;
  return out;
}

export function newId(prefix: IdPrefix, bytes = 16): string {
  return `${prefix}_${base62(idBytes(bytes))}`;
}
