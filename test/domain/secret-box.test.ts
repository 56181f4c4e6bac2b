import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SecretBox } from "../../src/lib/secret-box.js";

describe("SecretBox (AES-256-GCM)", () => {
  const box = new SecretBox(randomBytes(32).toString("hex"));

  it("round-trips any text and never repeats a ciphertext", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (text, ad) => {
        const a = box.seal(text, ad);
        return (
          box.open(a, ad) === text && box.seal(text, ad) !== a && (text.length < 12 || !a.includes(text))
        );
      }),
    );
  });

  it("refuses tampering, other associated data and other keys", () => {
    const sealed = box.seal("whsec_abcdefgh", "webhook:mer_1:sandbox");
    const parts = sealed.split(".");
    const flipped = [...parts];
    const body = Buffer.from(parts[3]!, "base64url");
    body[0] = (body[0] ?? 0) ^ 1;
    flipped[3] = body.toString("base64url");
    expect(() => box.open(flipped.join("."), "webhook:mer_1:sandbox")).toThrow();
    expect(() => box.open(sealed, "webhook:mer_2:sandbox")).toThrow();
    expect(() =>
      new SecretBox(randomBytes(32).toString("hex")).open(sealed, "webhook:mer_1:sandbox"),
    ).toThrow();
    expect(() => box.open("garbage")).toThrow();
    expect(() => new SecretBox("abcd")).toThrow(/32 bytes/);
  });
});
