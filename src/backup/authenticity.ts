import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import path from "node:path";
import type { Config } from "../config/config.js";
import { readKeyFile } from "../lib/private-files.js";

/**
 * Who made a backup: every archive carries `SHA256SUMS.hmac`, an HMAC-SHA256 of `SHA256SUMS` (which
 * lists the digest of every other entry — the manifest, the configuration, the dump, the sealed
 * secrets) under a key derived with HKDF-SHA256 from the installation's `SECRET_ENCRYPTION_KEY`.
 * The installation that restores shares that key with the one that backed up (without it the
 * webhook secrets and TOTP seeds the database holds are unreadable anyway), so a restore can tell
 * its own backups from anyone else's: a forger who recomputes the digests cannot recompute the MAC.
 * A key identifier (HKDF with another label: it reveals nothing of the key) lets the refusal say
 * "made with another SECRET_ENCRYPTION_KEY" rather than "altered". docs/decisions/backups.md point 2.
 */

export const MAC_ENTRY = "SHA256SUMS.hmac";

const MAC_INFO = "stablegate/backup-mac/v1";
const KEY_ID_INFO = "stablegate/backup-key-id/v1";
/** What the MAC is computed over, before the bytes of `SHA256SUMS` (domain separation). */
const MAC_PREFIX = "stablegate-backup-mac v1\n";

export interface BackupMacKey {
  key: Buffer;
  /** 16 hex characters identifying the key (not secret). */
  id: string;
}

export interface MacEntry {
  format: "stablegate-backup-mac";
  version: 1;
  algorithm: "hmac-sha256";
  key: { derivation: "hkdf-sha256"; from: "SECRET_ENCRYPTION_KEY"; info: typeof MAC_INFO; id: string };
  covers: "SHA256SUMS";
  mac: string;
}

/** The MAC key of an installation whose `SECRET_ENCRYPTION_KEY` (64 hex characters) is `secretKey`. */
export function backupMacKey(secretKey: string): BackupMacKey {
  if (!/^[0-9a-fA-F]{64}$/.test(secretKey))
    throw new Error("SECRET_ENCRYPTION_KEY must be 64 hex characters");
  const ikm = Buffer.from(secretKey, "hex");
  const salt = Buffer.alloc(0);
  return {
    key: Buffer.from(hkdfSync("sha256", ikm, salt, MAC_INFO, 32)),
    id: Buffer.from(hkdfSync("sha256", ikm, salt, KEY_ID_INFO, 8)).toString("hex"),
  };
}

function macOf(sums: Buffer, key: Buffer): Buffer {
  return createHmac("sha256", key).update(MAC_PREFIX, "utf8").update(sums).digest();
}

/** The `SHA256SUMS.hmac` entry for the archive whose `SHA256SUMS` is `sums`. */
export function macEntry(sums: Buffer, key: BackupMacKey): Buffer {
  const entry: MacEntry = {
    format: "stablegate-backup-mac",
    version: 1,
    algorithm: "hmac-sha256",
    key: { derivation: "hkdf-sha256", from: "SECRET_ENCRYPTION_KEY", info: MAC_INFO, id: key.id },
    covers: "SHA256SUMS",
    mac: macOf(sums, key.key).toString("hex"),
  };
  return Buffer.from(`${JSON.stringify(entry)}\n`, "utf8");
}

export type MacCheck =
  | { ok: true }
  | { ok: false; why: "missing" | "malformed" | "other-key" | "altered"; keyId?: string };

/** Checks the `SHA256SUMS.hmac` text (undefined: absent) of an archive whose `SHA256SUMS` is `sums`. */
export function checkMac(text: string | undefined, sums: Buffer, key: BackupMacKey): MacCheck {
  if (text === undefined) return { ok: false, why: "missing" };
  let e: MacEntry;
  try {
    e = JSON.parse(text) as MacEntry;
  } catch {
    return { ok: false, why: "malformed" };
  }
  if (
    e?.format !== "stablegate-backup-mac" ||
    e.version !== 1 ||
    e.algorithm !== "hmac-sha256" ||
    e.key?.derivation !== "hkdf-sha256" ||
    e.key.info !== MAC_INFO ||
    typeof e.key.id !== "string" ||
    e.covers !== "SHA256SUMS" ||
    typeof e.mac !== "string" ||
    !/^[0-9a-f]{64}$/.test(e.mac)
  )
    return { ok: false, why: "malformed" };
  const given = Buffer.from(e.mac, "hex");
  if (timingSafeEqual(given, macOf(sums, key.key))) return { ok: true };
  return e.key.id !== key.id
    ? { ok: false, why: "other-key", keyId: e.key.id }
    : { ok: false, why: "altered" };
}

/**
 * This process's `SECRET_ENCRYPTION_KEY` as the service would use it, never generating one: the
 * variable, else (outside production mode) the generated one in `DATA_DIR/secrets.json`
 * (`config/secrets.ts`). Undefined when there is none (a new DATA_DIR in development).
 */
export async function processSecretKey(config: Config): Promise<string | undefined> {
  const given = config.secrets.SECRET_ENCRYPTION_KEY;
  if (given) return given;
  if (config.production) return undefined;
  const text = await readKeyFile(path.join(config.dataDir, "secrets.json"));
  return text === undefined ? undefined : keyOfSecretsJson(text);
}

/** The `SECRET_ENCRYPTION_KEY` a `secrets.json` text holds, if any. */
export function keyOfSecretsJson(text: string): string | undefined {
  try {
    const v = (JSON.parse(text) as { SECRET_ENCRYPTION_KEY?: unknown }).SECRET_ENCRYPTION_KEY;
    return typeof v === "string" && /^[0-9a-fA-F]{64}$/.test(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
