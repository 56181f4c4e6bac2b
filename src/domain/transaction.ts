import type { CurrencyType } from "./currency.js";
import type { Environment } from "./environment.js";
import { formatAmount } from "./money.js";

export const TRANSACTION_TYPES = ["deposit", "withdrawal", "payout"] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
export const TRANSACTION_STATUSES = [
  "pending",
  "processing",
  "confirmed",
  "completed",
  "failed",
  "rejected",
  // A deposit from a frozen or refused sender (README.md#frozen-funds, issue #40): recorded, counted
  // in `held`, never credited nor swept until released (→ `confirmed`) or returned (→ `returned`).
  "held",
  "returned",
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

/** A deposit, withdrawal or payout as the domain sees it (money in base units). */
export interface TransactionRecord {
  id: string;
  merchantId: string;
  environment: Environment;
  type: TransactionType;
  status: TransactionStatus;
  currencyType: CurrencyType;
  amount: bigint;
  fee: bigint;
  netAmount: bigint;
  actualBalance: bigint | null;
  walletAddress: string | null;
  blockchainTxHash: string | null;
  orderId: string | null;
  reference: string | null;
  externalUserId: string | null;
  checkoutSessionId: string | null;
  rejectionReason: string | null;
  /** A deposit that arrived as another currency type than its address was made for (issue #37). */
  wrongNetwork: boolean;
  /**
   * Why a deposit is (or was) `held` (issue #40): `token_blacklist` (the issuer froze its sender) or
   * `screening: <reason>` (the screening provider refused it). Null otherwise.
   */
  holdReason: string | null;
  /** The payment link that opened this deposit's checkout session (issue #41); null otherwise. */
  paymentLinkId: string | null;
  createdAt: Date;
  updatedAt: Date;
  confirmedAt: Date | null;
}

/**
 * The transaction object (docs/api-reference.md#schema-transaction) — the one shape used by the API and as webhook `data`
 * (`id` and `transactionId` carry the same value, `network` the same as `currencyType`).
 */
export function presentTransaction(t: TransactionRecord) {
  return {
    type: t.type,
    transactionId: t.id,
    id: t.id,
    clientId: t.merchantId,
    amount: formatAmount(t.amount),
    fee: formatAmount(t.fee),
    netAmount: formatAmount(t.netAmount),
    actualBalance: t.actualBalance === null ? null : formatAmount(t.actualBalance),
    currencyType: t.currencyType,
    network: t.currencyType,
    status: t.status,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    confirmedAt: t.confirmedAt ? t.confirmedAt.toISOString() : null,
    blockchainTxHash: t.blockchainTxHash,
    walletAddress: t.walletAddress,
    orderId: t.orderId,
    reference: t.reference,
    externalUserId: t.externalUserId,
    checkoutSessionId: t.checkoutSessionId,
    // Only on a wrong-network deposit: every other transaction keeps its shape.
    ...(t.wrongNetwork ? { wrongNetwork: true as const } : {}),
    // Only on a deposit that is or was held (README.md#frozen-funds).
    ...(t.holdReason !== null ? { holdReason: t.holdReason } : {}),
    // Only on the deposit of a session opened from a payment link (issue #41).
    ...(t.paymentLinkId ? { paymentLinkId: t.paymentLinkId } : {}),
  };
}
