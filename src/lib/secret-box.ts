import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Encryption at rest for secrets we must be able to read back (webhook secrets, TOTP seeds):
 * AES-256-GCM with `SECRET_ENCRYPTION_KEY`, a fresh 96-bit nonce per value, and an optional
 * associated-data string binding the ciphertext to its row (e.g. `webhook:<merchant>:<env>`), so a
 * ciphertext copied to another row does not decrypt. Stored form: `v1.<nonce>.<tag>.<ciphertext>` (base64url).
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(hexKey: string) {
    this.#key = Buffer.from(hexKey, "hex");
    if (this.#key.length !== 32)
      throw new Error("SECRET_ENCRYPTION_KEY must be 32 bytes (64 hex characters)");
  }

  seal(plaintext: string, associatedData = ""): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, nonce);
    cipher.setAAD(Buffer.from(associatedData, "utf8"));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return ["v1", nonce, cipher.getAuthTag(), body]
      .map((p) => (typeof p === "string" ? p : p.toString("base64url")))
      .join(".");
  }

  /** Throws when the value was tampered with, sealed under another key or other associated data. */
  open(sealed: string, associatedData = ""): string {
    const [version, nonce, tag, body] = sealed.split(".");
    if (version !== "v1" || !nonce || !tag || body === undefined) throw new Error("not a sealed secret");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(nonce, "base64url"));
    decipher.setAAD(Buffer.from(associatedData, "utf8"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString(
      "utf8",
    );
  }
}
