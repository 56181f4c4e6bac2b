import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base62, newId } from "../../src/domain/ids.js";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** The plain BigInt definition the fast version must match digit for digit. */
function reference(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(Math.ceil((bytes.length * 8) / Math.log2(62)), "0");
}

describe("ids", () => {
  it("base62 equals the BigInt definition for any bytes (lengths 0..40, zeros and 0xff runs)", () => {
    const bytes = fc.oneof(
      fc.uint8Array({ minLength: 0, maxLength: 40 }),
      fc.integer({ min: 0, max: 40 }).map((n) => new Uint8Array(n)),
      fc.integer({ min: 1, max: 40 }).map((n) => new Uint8Array(n).fill(0xff)),
    );
    fc.assert(
      fc.property(bytes, (b) => {
        expect(base62(b)).toBe(reference(b));
      }),
      { numRuns: 2000 },
    );
    expect(base62(Uint8Array.of(0, 0, 0, 61))).toBe(reference(Uint8Array.of(0, 0, 0, 61)));
    expect(base62(Uint8Array.of(0, 0, 0, 62))).toMatch(/10$/);
  });

  it("newId: prefix, 22 base62 characters for 16 bytes, no repeats across several random blocks", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const id = newId("tx");
      expect(id).toMatch(/^tx_[0-9A-Za-z]{22}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(5000);
    // Other sizes, including one larger than the pooled path takes.
    expect(newId("key", 32)).toMatch(/^key_[0-9A-Za-z]{43}$/);
    expect(newId("key", 300).length).toBe(4 + Math.ceil((300 * 8) / Math.log2(62)));
    expect(base62(randomBytes(16))).toHaveLength(22);
  });
});
