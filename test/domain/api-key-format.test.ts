import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatCredential, parseCredential } from "../../src/domain/api-key-format.js";

const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
const kind = fc.constantFrom("key" as const, "secret" as const);
const env = fc.constantFrom("production" as const, "sandbox" as const);

describe("API credential format", () => {
  it("carries kind and environment in the prefix and round-trips", () => {
    fc.assert(
      fc.property(kind, env, bytes32, (k, e, b) => {
        const s = formatCredential(k, e, b);
        const prefix = `${k === "key" ? "ak" : "sk"}_${e === "production" ? "live" : "test"}_`;
        const parsed = parseCredential(s);
        return (
          s.startsWith(prefix) &&
          s.length === prefix.length + 49 &&
          parsed?.kind === k &&
          parsed.environment === e
        );
      }),
    );
  });

  it("rejects any single-character change (checksum)", () => {
    const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    fc.assert(
      fc.property(kind, env, bytes32, fc.nat(), fc.nat(), (k, e, b, pos, ch) => {
        const s = formatCredential(k, e, b);
        const i = 8 + (pos % (s.length - 8));
        const c = alphabet[ch % alphabet.length] as string;
        if (s[i] === c) return true;
        return parseCredential(s.slice(0, i) + c + s.slice(i + 1)) === null;
      }),
      { numRuns: 2000 },
    );
  });

  it("rejects foreign shapes", () => {
    for (const s of [
      "",
      "ak_live_",
      "ak_prod_" + "a".repeat(49),
      "pk_live_" + "a".repeat(49),
      "ak_live_" + "a".repeat(48),
      " ak_live_x",
    ]) {
      expect(parseCredential(s)).toBeNull();
    }
  });
});
