import type { CurrencyType } from "./currency.js";
import type { Environment } from "./environment.js";
import type { FieldError } from "./errors.js";
import { formatRate } from "./exchange-rate.js";
import { formatAmount } from "./money.js";
import type { TransactionRecord } from "./transaction.js";

/** Longest session lifetime (docs/api-reference.md#schema-checkoutsession): 1440 minutes. */
export const MAX_EXPIRY_MINUTES = 1440;
export const DEFAULT_EXPIRY_MINUTES = 30;
/** `metadata` is a JSON object of at most 4 KB (its UTF-8 JSON text). */
export const MAX_METADATA_BYTES = 4096;

/**
 * Lifetime of a new session in milliseconds: `expiresInMinutes` (fractions allowed) between
 * `CHECKOUT_MIN_EXPIRY_SECONDS` and 1440 minutes; default 30 minutes.
 */
export function sessionLifetimeMs(
  expiresInMinutes: number | undefined,
  minExpirySeconds: number,
): { ms: number; errors: FieldError[] } {
  const minutes = expiresInMinutes ?? DEFAULT_EXPIRY_MINUTES;
  const ms = Math.round(minutes * 60_000);
  if (!Number.isFinite(minutes) || ms < minExpirySeconds * 1000 || minutes > MAX_EXPIRY_MINUTES) {
    return {
      ms,
      errors: [
        {
          field: "expiresInMinutes",
          message: `must be between ${minExpirySeconds / 60} and ${MAX_EXPIRY_MINUTES} minutes`,
        },
      ],
    };
  }
  return { ms, errors: [] };
}

export function metadataErrors(metadata: unknown): FieldError[] {
  if (metadata === undefined) return [];
  if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata))
    return [{ field: "metadata", message: "must be a JSON object" }];
  if (new TextEncoder().encode(JSON.stringify(metadata)).length > MAX_METADATA_BYTES)
    return [{ field: "metadata", message: `must be at most ${MAX_METADATA_BYTES} bytes as JSON` }];
  return [];
}

/**
 * The price in fiat a session was created with and the rate locked then (docs/decisions/prices.md):
 * the token amount to pay is `amount` of its transaction, `priceAmount × rate` rounded up.
 */
export interface SessionPrice {
  /** In 10^-6 units of `currency` (parsed like a token amount). */
  amount: bigint;
  /** ISO 4217, e.g. `EUR`. */
  currency: string;
  /** Token units per unit of `currency`, 10^-18 units (`domain/exchange-rate.ts`). */
  rate: bigint;
  /** The source that quoted the rate (`EXCHANGE_RATE_SOURCE`). */
  source: string;
  /** When the source quoted it. */
  at: Date;
}

/** What a session is, beyond its deposit transaction. */
export interface CheckoutSessionRecord {
  transaction: TransactionRecord;
  network: CurrencyType;
  address: string;
  expiresAt: Date;
  callbackUrl: string | null;
  metadata: Record<string, unknown> | null;
  closedAt: Date | null;
  /** The price in fiat, when the session was given one instead of `amount`; null otherwise. */
  price: SessionPrice | null;
  /** Where the hosted page sends the payer after `confirmed` ("back to the shop"); null when not given. */
  successUrl: string | null;
  /** Where the hosted page sends the payer who cancels, or after expiry; null when not given. */
  cancelUrl: string | null;
}

/**
 * A session's price fields as the API and the deposit webhooks show them: `priceAmount` a JSON
 * number like an amount, `exchangeRate` exact decimal text; all null for a session priced in the token.
 */
export function presentSessionPrice(price: SessionPrice | null) {
  return {
    priceAmount: price ? formatAmount(price.amount) : null,
    priceCurrency: price?.currency ?? null,
    exchangeRate: price ? formatRate(price.rate) : null,
    rateSource: price?.source ?? null,
    rateAt: price ? price.at.toISOString() : null,
  };
}

/** The longest `successUrl` / `cancelUrl`. */
export const MAX_RETURN_URL_LENGTH = 2048;

/**
 * The rules of a URL the hosted page sends the payer to (`successUrl`, `cancelUrl`): an absolute
 * https URL (plain http in the sandbox only), no credentials, no spaces, control characters or
 * backslashes, at most 2048 characters. The gateway never calls it, so nothing is resolved (unlike
 * `callbackUrl`); what matters is that the page never links to `javascript:`, `data:` or the like.
 */
export function returnUrlErrors(field: string, raw: unknown, environment: Environment): FieldError[] {
  const fail = (message: string) => [{ field, message }];
  if (typeof raw !== "string") return fail("must be a URL");
  if (raw.length === 0 || raw.length > MAX_RETURN_URL_LENGTH)
    return fail(`must be 1 to ${MAX_RETURN_URL_LENGTH} characters`);
  if (
    raw.trim() !== raw ||
    /[\s\\]/.test(raw) ||
    [...raw].some((c) => c.charCodeAt(0) < 0x20 || c === "\x7f")
  )
    return fail("must not contain spaces, control characters or backslashes");
  if (!URL.canParse(raw)) return fail("must be an absolute URL");
  const url = new URL(raw);
  if (url.protocol !== "https:" && url.protocol !== "http:") return fail("must be an https URL");
  if (url.protocol === "http:" && environment !== "sandbox")
    return fail("must be an https URL (plain http is accepted in sandbox only)");
  if (url.username || url.password) return fail("must not contain credentials");
  if (!url.hostname) return fail("must have a host");
  return [];
}

/** Largest underpayment tolerance a merchant may set: 10 % (1000 basis points). */
export const MAX_UNDERPAYMENT_TOLERANCE_BP = 1000;

/**
 * The smallest received total that confirms a session: `amount × (1 − tolerance)` with the
 * tolerance in basis points (100 = 1 %), rounded up to a whole base unit (never below what the
 * merchant allowed).
 */
export function confirmationThreshold(amount: bigint, toleranceBp: number): bigint {
  const keep = BigInt(10_000 - toleranceBp);
  return (amount * keep + 9_999n) / 10_000n;
}

/**
 * What happens to a confirmed transfer that reaches a session's address, decided under the session's
 * lock (so a payment and the expiry job agree on one outcome). On time is decided by the chain: the
 * transfer's block timestamp against `expiresAt`, however late its confirmations complete.
 * - `accumulate`: the session is open, the transfer was mined before the deadline, and the total is
 *   still short: the received total grows, nothing is credited yet;
 * - `confirm`: the same, and the total reaches `amount × (1 − tolerance)`: confirmed, the whole total
 *   credited;
 * - `expire_then_late`: the transfer was mined at or after the deadline and the session is still open:
 *   close it first (with what came in time), then treat this transfer as a late payment;
 * - `late`: the session is closed: the transfer becomes its own confirmed deposit linked to the session.
 */
export type SessionTransferOutcome =
  | { kind: "accumulate"; received: bigint }
  | { kind: "confirm"; received: bigint }
  | { kind: "expire_then_late" }
  | { kind: "late" };

export function sessionTransferOutcome(
  session: { status: string; amount: bigint; received: bigint; expiresAt: Date; toleranceBp: number },
  transfer: { amount: bigint; blockTime: Date },
): SessionTransferOutcome {
  if (session.status !== "pending") return { kind: "late" };
  if (transfer.blockTime.getTime() >= session.expiresAt.getTime()) return { kind: "expire_then_late" };
  const received = session.received + transfer.amount;
  return received >= confirmationThreshold(session.amount, session.toleranceBp)
    ? { kind: "confirm", received }
    : { kind: "accumulate", received };
}

/**
 * How an open session ends once its deadline has passed on the chain with nothing in time still
 * confirming: `confirmed` when what arrived in time reaches `amount × (1 − tolerance)` (the tolerance
 * may have been raised after the payment), else `failed` (what arrived is credited either way).
 */
export function sessionOutcomeAtDeadline(session: {
  amount: bigint;
  received: bigint;
  toleranceBp: number;
}): "confirmed" | "failed" {
  return session.received > 0n &&
    session.received >= confirmationThreshold(session.amount, session.toleranceBp)
    ? "confirmed"
    : "failed";
}

/**
 * What the chain shows of a session's payment before it is settled (README.md#money-when-a-payment-counts-and-books-that-match): the block time of
 * the first transfer in time to its address, the sum of the transfers in time (confirmed or not), and
 * the confirmations of the least-confirmed of them.
 */
export interface SessionDetection {
  detectedAt: Date | null;
  detectedAmount: bigint;
  confirmations: { current: number; required: number };
}

/** Nothing seen yet (a new session). */
export function noDetection(required: number): SessionDetection {
  return { detectedAt: null, detectedAmount: 0n, confirmations: { current: 0, required } };
}

/** `{base}/pay/{id}` for the environment's base URL. */
export function checkoutUrl(baseUrl: string, sessionId: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/pay/${encodeURIComponent(sessionId)}`;
}
