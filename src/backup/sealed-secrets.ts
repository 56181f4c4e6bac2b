import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { hashRaw, type Options } from "@node-rs/argon2";

/**
 * The secrets of a backup (`--include-secrets`), sealed with a passphrase: the key is derived with
 * argon2id (64 MiB, 3 passes, 1 lane; a random 16-byte salt) and the secrets are encrypted with
 * AES-256-GCM (a random 96-bit nonce). The header — format, the key derivation's parameters and
 * salt, the nonce and `binds` (the digest of the backup's manifest, which holds the digests of the
 * dump and the configuration) — is the cipher's associated data: altering any of it, the
 * ciphertext or the manifest, or giving another passphrase, fails the authentication tag. A wrong
 * passphrase and an altered file are the same refusal: GCM cannot tell them apart.
 */

export interface SealedSecrets {
  format: "stablegate-secrets";
  version: 1;
  kdf: { name: "argon2id"; memoryKiB: number; passes: number; lanes: number; salt: string };
  cipher: { name: "aes-256-gcm"; nonce: string };
  /** What the secrets belong to: the SHA-256 of the backup's `manifest.json`. */
  binds: { manifest: string };
  ciphertext: string;
  tag: string;
}

/** What is sealed: environment variables by name, and files of DATA_DIR by name. */
export interface SecretPayload {
  env: Record<string, string>;
  files: Record<string, string>;
}

export class PassphraseError extends Error {}

/** A passphrase shorter than this is refused when sealing (the backup may be copied anywhere). */
export const PASSPHRASE_MIN = 12;

const KDF = { memoryKiB: 65_536, passes: 3, lanes: 1 } as const;
/** Bounds on the parameters a file may ask for: a forged file must not make the reader spend a gigabyte. */
const KDF_LIMITS = { memoryKiB: 1_048_576, passes: 16, lanes: 8 } as const;

async function deriveKey(passphrase: string, kdf: SealedSecrets["kdf"]): Promise<Buffer> {
  const options: Options = {
    algorithm: 2 as Options["algorithm"], // Argon2id (an ambient const enum isolatedModules cannot read)
    memoryCost: kdf.memoryKiB,
    timeCost: kdf.passes,
    parallelism: kdf.lanes,
    outputLen: 32,
    salt: Buffer.from(kdf.salt, "base64"),
  };
  return hashRaw(Buffer.from(passphrase, "utf8"), options);
}

/** The associated data: every header field, in one fixed order. */
function associatedData(s: Pick<SealedSecrets, "format" | "version" | "kdf" | "cipher" | "binds">): Buffer {
  return Buffer.from(
    JSON.stringify([
      s.format,
      s.version,
      [s.kdf.name, s.kdf.memoryKiB, s.kdf.passes, s.kdf.lanes, s.kdf.salt],
      [s.cipher.name, s.cipher.nonce],
      [s.binds.manifest],
    ]),
    "utf8",
  );
}

export async function sealSecrets(
  payload: SecretPayload,
  passphrase: string,
  manifestSha256: string,
): Promise<SealedSecrets> {
  if (passphrase.length < PASSPHRASE_MIN)
    throw new PassphraseError(`the passphrase must be at least ${PASSPHRASE_MIN} characters`);
  const head = {
    format: "stablegate-secrets" as const,
    version: 1 as const,
    kdf: { name: "argon2id" as const, ...KDF, salt: randomBytes(16).toString("base64") },
    cipher: { name: "aes-256-gcm" as const, nonce: randomBytes(12).toString("base64") },
    binds: { manifest: manifestSha256 },
  };
  const key = await deriveKey(passphrase, head.kdf);
  const cipher = createCipheriv("aes-256-gcm", key, Buffer.from(head.cipher.nonce, "base64"));
  cipher.setAAD(associatedData(head));
  const body = Buffer.concat([cipher.update(JSON.stringify(payload), "utf8"), cipher.final()]);
  key.fill(0);
  return { ...head, ciphertext: body.toString("base64"), tag: cipher.getAuthTag().toString("base64") };
}

/** Parses and checks the header's shape and bounds before any key is derived. */
export function parseSealedSecrets(text: string): SealedSecrets {
  let s: SealedSecrets;
  try {
    s = JSON.parse(text) as SealedSecrets;
  } catch {
    throw new PassphraseError("the sealed secrets are not readable (damaged)");
  }
  const b64 = (v: unknown, bytes?: number) =>
    typeof v === "string" &&
    /^[A-Za-z0-9+/]*={0,2}$/.test(v) &&
    (bytes === undefined || Buffer.from(v, "base64").length === bytes);
  const int = (v: unknown, max: number) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= max;
  const ok =
    s !== null &&
    typeof s === "object" &&
    s.format === "stablegate-secrets" &&
    s.version === 1 &&
    s.kdf?.name === "argon2id" &&
    int(s.kdf.memoryKiB, KDF_LIMITS.memoryKiB) &&
    s.kdf.memoryKiB >= 8 * s.kdf.lanes &&
    int(s.kdf.passes, KDF_LIMITS.passes) &&
    int(s.kdf.lanes, KDF_LIMITS.lanes) &&
    b64(s.kdf.salt) &&
    Buffer.from(s.kdf.salt, "base64").length >= 16 &&
    s.cipher?.name === "aes-256-gcm" &&
    b64(s.cipher.nonce, 12) &&
    typeof s.binds?.manifest === "string" &&
    /^[0-9a-f]{64}$/.test(s.binds.manifest) &&
    b64(s.ciphertext) &&
    b64(s.tag, 16);
  if (!ok) throw new PassphraseError("the sealed secrets are not in a format this build reads (damaged?)");
  return s;
}

/**
 * Opens sealed secrets with `passphrase`; they must belong to the manifest whose digest is
 * `manifestSha256`. Throws `PassphraseError` on a wrong passphrase or any alteration.
 */
export async function openSecrets(
  sealed: SealedSecrets,
  passphrase: string,
  manifestSha256: string,
): Promise<SecretPayload> {
  if (sealed.binds.manifest !== manifestSha256)
    throw new PassphraseError("the sealed secrets belong to another backup's manifest (altered archive)");
  const key = await deriveKey(passphrase, sealed.kdf);
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.cipher.nonce, "base64"));
  decipher.setAAD(associatedData(sealed));
  decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
  let plain: Buffer;
  try {
    plain = Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, "base64")), decipher.final()]);
  } catch {
    throw new PassphraseError("wrong passphrase, or the sealed secrets were altered: nothing was restored");
  } finally {
    key.fill(0);
  }
  const payload = JSON.parse(plain.toString("utf8")) as SecretPayload;
  plain.fill(0);
  return payload;
}
