import { createHmac, createSecretKey, type KeyObject } from "node:crypto";
import { type SignedHeaders, standardKey } from "./signing.js";

/**
 * `signatureHeaders` (signing.ts) for a delivery worker: the same headers, byte for byte, with the
 * HMAC keys imported once per secret instead of once per attempt (the worker signs thousands of
 * attempts a second with a handful of secrets). `signing.ts` stays the definition of the scheme;
 * test/webhooks/attempt-signer.test.ts holds the two to the same output.
 */
export class AttemptSigner {
  readonly #legacy: KeyObject;
  readonly #standard: KeyObject[];

  /** `secrets[0]` is the current secret; any others are still valid (rotation grace). */
  constructor(secrets: readonly string[]) {
    const [current] = secrets;
    if (!current) throw new Error("no webhook secret");
    this.#legacy = createSecretKey(Buffer.from(current, "utf8"));
    this.#standard = secrets.map((s) => createSecretKey(standardKey(s)));
  }

  headers(id: string, timestampSeconds: number, body: string | Buffer): SignedHeaders {
    return this.addHeaders({}, id, timestampSeconds, body) as unknown as SignedHeaders;
  }

  /** Adds the signature headers to `target` (a worker's header object, built once per attempt). */
  addHeaders(
    target: Record<string, string>,
    id: string,
    timestampSeconds: number,
    body: string | Buffer,
  ): Record<string, string> {
    const prefix = `${id}.${timestampSeconds}.`;
    let standard = "";
    for (const key of this.#standard) {
      const mac = createHmac("sha256", key).update(prefix).update(body).digest("base64");
      standard = standard ? `${standard} v1,${mac}` : `v1,${mac}`;
    }
    target["x-webhook-signature"] = `sha256=${createHmac("sha256", this.#legacy).update(body).digest("hex")}`;
    target["webhook-id"] = id;
    target["webhook-timestamp"] = String(timestampSeconds);
    target["webhook-signature"] = standard;
    return target;
  }
}
