import { createHmac } from "node:crypto";

/**
 * Webhook signatures (docs/merchants/webhooks.md#signatures).
 *
 *  - `X-Webhook-Signature: sha256=<hex>`: HMAC-SHA256 of the exact body bytes, keyed with the
 *    environment's current `webhookSecret` (the whole `whsec_…` string as UTF-8, as the merchant
 *    sees it).
 *  - Standard Webhooks (https://www.standardwebhooks.com): `webhook-id` (the event id, stable across
 *    retries), `webhook-timestamp` (seconds, per attempt) and `webhook-signature`:
 *    space-separated `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`, the key being the
 *    base64-decoded part after `whsec_`; during the 24 h after a rotation it carries one signature
 *    per secret (new first), so receivers verify with either.
 */

export const SECRET_PREFIX = "whsec_";

export function legacySignature(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** The HMAC key of a `whsec_` secret under the Standard Webhooks rules. */
export function standardKey(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    "base64",
  );
}

export function standardSignature(
  secret: string,
  id: string,
  timestamp: number,
  body: string | Buffer,
): string {
  const mac = createHmac("sha256", standardKey(secret));
  mac.update(`${id}.${timestamp}.`);
  mac.update(body);
  return `v1,${mac.digest("base64")}`;
}

export interface SignedHeaders {
  "x-webhook-signature": string;
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** The signature headers of one attempt. `secrets[0]` is the current secret; any others still valid. */
export function signatureHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string | Buffer,
): SignedHeaders {
  const [current] = secrets;
  if (!current) throw new Error("no webhook secret");
  return {
    "x-webhook-signature": legacySignature(current, body),
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": secrets.map((s) => standardSignature(s, id, timestampSeconds, body)).join(" "),
  };
}
