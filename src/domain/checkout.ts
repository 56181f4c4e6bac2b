import type { CurrencyType } from "./currency.js";
import type { FieldError } from "./errors.js";
import { formatAmount } from "./money.js";
import type { TransactionRecord } from "./transaction.js";

/** Longest session lifetime (CONTRACT §4.1): 1440 minutes. */
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

/** What a session is, beyond its deposit transaction. */
export interface CheckoutSessionRecord {
  transaction: TransactionRecord;
  network: CurrencyType;
  address: string;
  expiresAt: Date;
  callbackUrl: string | null;
  metadata: Record<string, unknown> | null;
  closedAt: Date | null;
}

/**
 * What happens to a confirmed transfer that reaches a session's address, decided under the session's
 * lock (so a payment and the expiry job agree on one outcome):
 * - `accumulate`: the session is open and still short: the received total grows, nothing is credited yet;
 * - `confirm`: the session is open and the total reaches `amount`: confirmed, the whole total credited;
 * - `expire_then_late`: the deadline has passed but the expiry job has not closed it yet: close it as
 *   `failed` first (crediting what came before), then treat this transfer as a late payment;
 * - `late`: the session is closed: the transfer becomes its own confirmed deposit linked to the session.
 * The deadline decides: a payment confirmed after `expiresAt` is late, whatever ran first.
 */
export type SessionTransferOutcome =
  | { kind: "accumulate"; received: bigint }
  | { kind: "confirm"; received: bigint }
  | { kind: "expire_then_late" }
  | { kind: "late" };

export function sessionTransferOutcome(
  session: { status: string; amount: bigint; received: bigint; expiresAt: Date },
  transferAmount: bigint,
  now: Date,
): SessionTransferOutcome {
  if (session.status !== "pending") return { kind: "late" };
  if (now.getTime() >= session.expiresAt.getTime()) return { kind: "expire_then_late" };
  const received = session.received + transferAmount;
  return received >= session.amount ? { kind: "confirm", received } : { kind: "accumulate", received };
}

/** The session object of CONTRACT §4.1 (amounts in USDT; `id` = `transactionId`). */
export function presentCheckoutSession(s: CheckoutSessionRecord, checkoutUrl: string) {
  const t = s.transaction;
  return {
    id: t.id,
    transactionId: t.id,
    status: t.status,
    amount: formatAmount(t.amount),
    currencyType: t.currencyType,
    network: s.network,
    walletAddress: s.address,
    expiresAt: s.expiresAt.toISOString(),
    checkoutUrl,
    callbackUrl: s.callbackUrl,
    orderId: t.orderId,
    metadata: s.metadata,
    actualBalance: t.actualBalance === null ? 0 : formatAmount(t.actualBalance),
    blockchainTxHash: t.blockchainTxHash,
    createdAt: t.createdAt.toISOString(),
    confirmedAt: t.confirmedAt ? t.confirmedAt.toISOString() : null,
  };
}

export type CheckoutSessionView = ReturnType<typeof presentCheckoutSession>;

/** `{base}/pay/{id}` for the environment's base URL. */
export function checkoutUrl(baseUrl: string, sessionId: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/pay/${encodeURIComponent(sessionId)}`;
}
