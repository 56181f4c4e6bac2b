import { createHash } from "node:crypto";
import type { Environment } from "./environment.js";
import { base62 } from "./ids.js";

/**
 * API key pair format (docs/merchants/authentication.md#key-pairs): `ak_live_` / `ak_test_` keys and `sk_live_` / `sk_test_`
 * secrets, 32 random bytes (256 bits) in base62, followed by a 6-character base62 checksum
 * (first 4 bytes of SHA-256 over prefix + body). The checksum lets us reject typos and garbage
 * without touching the database, and lets secret scanners recognise our tokens.
 */
export type CredentialKind = "key" | "secret";

const KIND_PREFIX: Record<CredentialKind, string> = { key: "ak", secret: "sk" };
const ENV_PREFIX: Record<Environment, string> = { production: "live", sandbox: "test" };
const BODY_LENGTH = 43; // ceil(256 / log2(62))
const CHECKSUM_LENGTH = 6; // ceil(32 / log2(62))
const PATTERN = /^(ak|sk)_(live|test)_([0-9A-Za-z]{43})([0-9A-Za-z]{6})$/;

function checksum(prefixAndBody: string): string {
  const digest = createHash("sha256").update(prefixAndBody).digest();
  return base62(digest.subarray(0, 4)).padStart(CHECKSUM_LENGTH, "0");
}

export function formatCredential(kind: CredentialKind, env: Environment, random: Uint8Array): string {
  if (random.length !== 32) throw new Error("credential needs 32 random bytes");
  const head = `${KIND_PREFIX[kind]}_${ENV_PREFIX[env]}_${base62(random)}`;
  return head + checksum(head);
}

export interface ParsedCredential {
  kind: CredentialKind;
  environment: Environment;
}

/** Parses and checks a credential; `null` when malformed or the checksum is wrong. */
export function parseCredential(value: string): ParsedCredential | null {
  const m = PATTERN.exec(value);
  if (!m) return null;
  const [, kind, env, body, sum] = m;
  if (body === undefined || body.length !== BODY_LENGTH) return null;
  if (checksum(`${kind}_${env}_${body}`) !== sum) return null;
  return { kind: kind === "ak" ? "key" : "secret", environment: env === "live" ? "production" : "sandbox" };
}

/** The stored form of a secret: SHA-256. Secrets carry 256 random bits, so a slow hash adds nothing. */
export function hashSecret(secret: string): Buffer {
  return createHash("sha256").update(secret).digest();
}
