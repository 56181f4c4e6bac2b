import { StablegateError, type StablegateErrorInit } from "./errors.js";
import type { WebhookEvent } from "./types.js";

/**
 * Verifies a webhook delivery with Web Crypto only (`globalThis.crypto.subtle`), so it runs the
 * same in Node ≥ 20, browsers, Deno, Bun and edge runtimes.
 *
 * Every stablegate delivery carries two signatures of the same bytes:
 *  - Standard Webhooks (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp`,
 *    `webhook-signature` = space-separated `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`,
 *    the key being the base64 text after `whsec_` (the gateway's src/webhooks/signing.ts). It
 *    signs the timestamp, so a delivery replayed later is refused: checked within
 *    `toleranceSeconds` (default 300) of now, either way.
 *  - `X-Webhook-Signature: sha256=<hex HMAC-SHA256(secret as UTF-8, body)>`. It signs the body
 *    only, so it cannot tell a fresh delivery from a replayed one.
 *
 * Replay rule: when the Standard headers are present, they decide (the sha256 header is not a
 * fallback: a body signed correctly under a forged timestamp is a replay). A delivery carrying
 * only `X-Webhook-Signature` (a relay that dropped headers, a hand-made request) is refused unless
 * `acceptUntimestamped: true`, in which case the receiver must deduplicate on its own (e.g. on
 * `data.transactionId` + `data.status`). During the 24 h after a secret rotation the Standard
 * header carries a signature per secret, so either secret verifies; pass several to try each.
 */

export type WebhookVerificationReason =
  | "missing_headers"
  | "invalid_timestamp"
  | "stale_timestamp"
  | "invalid_signature"
  | "invalid_body";

export class WebhookVerificationError extends StablegateError {
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string, init: Partial<StablegateErrorInit> = {}) {
    super({ ...init, message, code: "WEBHOOK_VERIFICATION_FAILED" });
    this.reason = reason;
  }
}

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Accept a delivery signed only by `X-Webhook-Signature` (no replay protection). Default false. */
  acceptUntimestamped?: boolean;
  /** "Now" for the timestamp check (a Date or epoch milliseconds); the clock by default. */
  now?: Date | number;
}

/** Header sources: a fetch `Headers`, Node's `IncomingHttpHeaders`, or any name → value record. */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;
export type RawBody = string | Uint8Array | ArrayBuffer;

const SECRET_PREFIX = "whsec_";
const encoder = new TextEncoder();

/**
 * Checks a delivery's signature and returns its parsed body. Throws {@link WebhookVerificationError}
 * on missing headers, a stale or malformed timestamp, a signature that does not match (tampered
 * bytes, wrong secret) or a body that is not a JSON object. Pass the body exactly as received
 * (before any JSON parsing: re-serialised JSON does not verify).
 */
export async function verifyWebhook(
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const body = toBytes(rawBody);
  // An unset secret (an environment variable not loaded) says so, not "secret is not iterable".
  const secrets = typeof secret === "string" ? [secret] : Array.isArray(secret) ? [...secret] : [];
  if (secrets.length === 0 || secrets.some((s) => typeof s !== "string" || s === "")) {
    throw new TypeError(
      `verifyWebhook: the webhook secret is required (got ${secret === undefined ? "undefined" : typeof secret}); pass your endpoint's whsec_… secret`,
    );
  }
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const legacy = header(headers, "x-webhook-signature");

  if (id !== undefined || timestamp !== undefined || signatures !== undefined) {
    if (id === undefined || timestamp === undefined || signatures === undefined) {
      throw new WebhookVerificationError(
        "missing_headers",
        "Incomplete Standard Webhooks headers: webhook-id, webhook-timestamp and webhook-signature are all required.",
      );
    }
    checkTimestamp(timestamp, options);
    const signed = concat(encoder.encode(`${id}.${timestamp}.`), body);
    const offered = signatures
      .split(" ")
      .map((s) => s.split(","))
      .filter(([version, value]) => version === "v1" && value)
      .map(([, value]) => fromBase64(value as string))
      .filter((b): b is Uint8Array => b !== undefined);
    for (const s of secrets) {
      const expected = await hmac(standardKey(s), signed);
      // Every offered signature is compared (no early exit on the first match).
      let match = false;
      for (const candidate of offered) match = constantTimeEqual(candidate, expected) || match;
      if (match) return parseEvent(body);
    }
    throw new WebhookVerificationError(
      "invalid_signature",
      "No webhook-signature matches: the body, id or timestamp was changed, or the secret is not this endpoint's.",
    );
  }

  if (legacy === undefined) {
    throw new WebhookVerificationError(
      "missing_headers",
      "No signature headers: expected webhook-id, webhook-timestamp and webhook-signature (and X-Webhook-Signature).",
    );
  }
  if (!options.acceptUntimestamped) {
    throw new WebhookVerificationError(
      "missing_headers",
      "Only X-Webhook-Signature is present; it does not sign a timestamp, so a replay cannot be told apart. " +
        "Keep the webhook-* headers, or pass { acceptUntimestamped: true } and deduplicate yourself.",
    );
  }
  const hex = /^sha256=([0-9a-fA-F]{64})$/.exec(legacy.trim())?.[1];
  if (hex !== undefined) {
    const offered = fromHex(hex);
    for (const s of secrets) {
      if (constantTimeEqual(offered, await hmac(encoder.encode(s), body))) return parseEvent(body);
    }
  }
  throw new WebhookVerificationError(
    "invalid_signature",
    "X-Webhook-Signature does not match: the body was changed, or the secret is not this endpoint's.",
  );
}

function checkTimestamp(timestamp: string, options: VerifyWebhookOptions): void {
  if (!/^\d{1,12}$/.test(timestamp)) {
    throw new WebhookVerificationError("invalid_timestamp", "webhook-timestamp is not a number of seconds.");
  }
  const tolerance = options.toleranceSeconds ?? 300;
  const nowMs = options.now === undefined ? Date.now() : Number(options.now);
  const skew = Math.abs(nowMs / 1000 - Number(timestamp));
  if (!(skew <= tolerance)) {
    throw new WebhookVerificationError(
      "stale_timestamp",
      `webhook-timestamp is ${Math.round(skew)} s from now (tolerance ${tolerance} s): a replayed or delayed delivery.`,
    );
  }
}

function parseEvent(body: Uint8Array): WebhookEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new WebhookVerificationError("invalid_body", "The signed body is not JSON.");
  }
  if (
    typeof parsed !== "object" ||
    parsed === null ||
    typeof (parsed as { data?: unknown }).data !== "object"
  ) {
    throw new WebhookVerificationError("invalid_body", "The signed body is not a webhook delivery.");
  }
  return parsed as WebhookEvent;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(
    headers as Record<string, string | readonly string[] | undefined>,
  )) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === "string") return value;
    if (Array.isArray(value)) return value.join(" ");
  }
  return undefined;
}

/** The HMAC key of a `whsec_` secret under the Standard Webhooks rules: the base64 after the prefix. */
function standardKey(secret: string): Uint8Array {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = fromBase64(b64);
  if (key === undefined) throw new TypeError("verifyWebhook: the webhook secret is not whsec_<base64>");
  return key;
}

async function hmac(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error("verifyWebhook needs Web Crypto (globalThis.crypto.subtle)");
  // Copied into plain ArrayBuffer-backed arrays: Web Crypto's types refuse a view that may be shared.
  const cryptoKey = await subtle.importKey(
    "raw",
    new Uint8Array(key),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await subtle.sign("HMAC", cryptoKey, new Uint8Array(data)));
}

/**
 * Written by hand because Web Crypto has no public compare and the SDK has no dependencies: the
 * time depends only on the lengths (public: a SHA-256 MAC is 32 bytes), never on where bytes differ.
 */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

function toBytes(raw: RawBody): Uint8Array {
  if (typeof raw === "string") return encoder.encode(raw);
  if (raw instanceof Uint8Array) return raw;
  if (raw instanceof ArrayBuffer) return new Uint8Array(raw);
  throw new TypeError(
    "verifyWebhook: rawBody must be the body as received (string, Uint8Array/Buffer or ArrayBuffer)",
  );
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function fromBase64(b64: string): Uint8Array | undefined {
  try {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}
