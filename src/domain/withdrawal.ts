import type { CurrencyType } from "./currency.js";
import type { TransactionRecord } from "./transaction.js";

/**
 * Withdrawals (end users of a merchant, docs/api-reference.md#withdrawals) and payouts (the merchant's own treasury,
 * docs/api-reference.md#payouts) are transactions of type `withdrawal` / `payout`. Their life:
 *
 *   request ─ hold ─┬─ auto ──────────────► processing ─┬─► completed  (hold settled, fee to fees)
 *                   └─ manual ─► pending ─┬─ approve ───┘ └─► failed     (hold released)
 *                                         └─ reject ─► rejected          (hold released)
 *
 * `processing` (broadcasting) sends no webhook; every other state after the request does, so an
 * auto flow sends one and a manual flow two (docs/merchants/webhooks.md#the-body). Payouts are always auto.
 */

export const WITHDRAWAL_STATUSES = ["pending", "processing", "completed", "failed", "rejected"] as const;
export type WithdrawalStatus = (typeof WITHDRAWAL_STATUSES)[number];
export const PAYOUT_STATUSES = ["processing", "completed", "failed"] as const;
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number];

/** A withdrawal's or payout's status, checked against the statuses of its kind. */
export function statusOf<T extends string>(allowed: readonly T[], t: TransactionRecord): T {
  if (!(allowed as readonly string[]).includes(t.status)) {
    throw new Error(`${t.type} ${t.id} has status ${t.status}, which ${t.type}s never have`);
  }
  return t.status as T;
}

export type ExecutionPolicy = "auto" | "manual";

/** Auto when `autoWithdraw` is on and the amount is at or under the currency's threshold (docs/api-reference.md#createwithdrawalrequest). */
export function withdrawalPolicy(
  settings: { autoWithdraw: boolean; autoApproveThreshold: Record<CurrencyType, bigint> },
  currencyType: CurrencyType,
  amount: bigint,
): ExecutionPolicy {
  return settings.autoWithdraw && amount <= settings.autoApproveThreshold[currencyType] ? "auto" : "manual";
}

/**
 * Four-eyes (issue #21): a withdrawal request above the currency's `dualApprovalThreshold` needs
 * two approvers; at or under it, or with no threshold (null: off), one.
 */
export function approvalsRequired(dualApprovalThreshold: bigint | null, amount: bigint): 1 | 2 {
  return dualApprovalThreshold !== null && amount > dualApprovalThreshold ? 2 : 1;
}

/**
 * Who approves: a member of the merchant through its session, or a key pair (`id`) acting for a
 * member (`member`; docs/decisions/team-accounts.md#four-eyes: counted as that member). A pair the operator issued to a
 * merchant without members acts for no person (`member` null): the API-key channel is one approver.
 */
export type Approver =
  | { type: "user"; id: string; email: string }
  | { type: "api_key"; id: string; member: { userId: string; email: string } | null };

export interface RecordedApproval {
  actorType: "user" | "api_key";
  actorId: string;
  email: string | null;
  approvedAt: Date;
}
