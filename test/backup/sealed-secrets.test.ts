import { describe, expect, it } from "vitest";
import {
  openSecrets,
  PassphraseError,
  parseSealedSecrets,
  sealSecrets,
} from "../../src/backup/sealed-secrets.js";

// The sealed secrets of a backup (src/backup/sealed-secrets.ts): argon2id + AES-256-GCM, the
// header authenticated, bound to the backup's manifest.

const PASSPHRASE = "a passphrase long enough";
const MANIFEST = "a".repeat(64);
const payload = {
  env: { JWT_SECRET: "jwt-secret-value-0123456789abcdef0123", MASTER_MNEMONIC: "test test junk" },
  files: { "secrets.json": '{"SECRET_ENCRYPTION_KEY":"00"}' },
};

describe("sealed secrets", { timeout: 30_000 }, () => {
  it("round-trip with the passphrase; the text holds none of the values", async () => {
    const sealed = await sealSecrets(payload, PASSPHRASE, MANIFEST);
    const text = JSON.stringify(sealed);
    for (const v of [...Object.values(payload.env), ...Object.values(payload.files)])
      expect(text).not.toContain(v);
    expect(sealed.kdf).toMatchObject({ name: "argon2id", memoryKiB: 65_536, passes: 3, lanes: 1 });
    expect(Buffer.from(sealed.kdf.salt, "base64")).toHaveLength(16);
    expect(await openSecrets(parseSealedSecrets(text), PASSPHRASE, MANIFEST)).toEqual(payload);
    // A fresh salt and nonce every time.
    const again = await sealSecrets(payload, PASSPHRASE, MANIFEST);
    expect(again.kdf.salt).not.toBe(sealed.kdf.salt);
    expect(again.cipher.nonce).not.toBe(sealed.cipher.nonce);
  });

  it("refuses a wrong passphrase, another manifest, and any altered field", async () => {
    const sealed = await sealSecrets(payload, PASSPHRASE, MANIFEST);
    await expect(openSecrets(sealed, `${PASSPHRASE}!`, MANIFEST)).rejects.toThrow(/wrong passphrase/);
    await expect(openSecrets(sealed, PASSPHRASE, "b".repeat(64))).rejects.toThrow(
      /another backup's manifest/,
    );
    const flip = (b64: string) => {
      const b = Buffer.from(b64, "base64");
      b[0] = (b[0] ?? 0) ^ 1;
      return b.toString("base64");
    };
    const altered = [
      { ...sealed, ciphertext: flip(sealed.ciphertext) },
      { ...sealed, tag: flip(sealed.tag) },
      { ...sealed, cipher: { ...sealed.cipher, nonce: flip(sealed.cipher.nonce) } },
      { ...sealed, kdf: { ...sealed.kdf, salt: flip(sealed.kdf.salt) } },
      { ...sealed, kdf: { ...sealed.kdf, passes: 2 } },
    ];
    for (const a of altered)
      await expect(openSecrets(a, PASSPHRASE, MANIFEST)).rejects.toBeInstanceOf(PassphraseError);
  });

  it("refuses a short passphrase, and a header asking for absurd work before deriving anything", async () => {
    await expect(sealSecrets(payload, "short", MANIFEST)).rejects.toThrow(/at least 12 characters/);
    const sealed = await sealSecrets(payload, PASSPHRASE, MANIFEST);
    for (const kdf of [
      { ...sealed.kdf, memoryKiB: 4_194_304 },
      { ...sealed.kdf, passes: 1000 },
      { ...sealed.kdf, lanes: 0 },
      { ...sealed.kdf, salt: "" },
    ])
      expect(() => parseSealedSecrets(JSON.stringify({ ...sealed, kdf }))).toThrow(PassphraseError);
    expect(() => parseSealedSecrets("not json")).toThrow(PassphraseError);
  });
});
