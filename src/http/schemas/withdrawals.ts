import { Type } from "@sinclair/typebox";
import { formatAmount } from "../../domain/money.js";
import type { TransactionRecord } from "../../domain/transaction.js";
import {
  PAYOUT_STATUSES,
  type RecordedApproval,
  statusOf,
  WITHDRAWAL_STATUSES,
} from "../../domain/withdrawal.js";
import { AmountInput } from "./deposits.js";
import { CurrencyTypeSchema, literals, nullable } from "./transaction.js";

export const WithdrawalStatusSchema = literals(WITHDRAWAL_STATUSES, {
  title: "WithdrawalStatus",
  description:
    "`pending` waits for your approval; `processing` is being sent; then `completed` or `failed` " +
    "(the hold returns to the balance); `rejected` by you (the hold returns)",
});
export const PayoutStatusSchema = literals(PAYOUT_STATUSES, {
  title: "PayoutStatus",
  description: "`processing` is being sent; then `completed` or `failed` (the hold returns to the balance)",
});

export const CreateWithdrawalBody = Type.Object(
  {
    amount: AmountInput,
    currencyType: CurrencyTypeSchema,
    walletAddress: Type.String({
      minLength: 1,
      maxLength: 100,
      description:
        "TRON base58check (T…) for USDT-TRC20; 0x hex (EIP-55 checksum when mixed-case) for USDT-ERC20",
    }),
    externalUserId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    reference: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

/** Every field optional: the body may be omitted (the document says `requestBody.required: false`). */
export const RejectBody = Type.Optional(
  Type.Object(
    {
      reason: Type.Optional(
        Type.String({ maxLength: 500, description: "Shown as `rejectionReason` on the withdrawal" }),
      ),
    },
    { additionalProperties: false },
  ),
);

/** The withdrawal object. */
export const WithdrawalSchema = Type.Object(
  {
    id: Type.String({ description: "Same value as transactionId" }),
    transactionId: Type.String(),
    status: WithdrawalStatusSchema,
    amount: Type.Number(),
    fee: Type.Number(),
    netAmount: Type.Number({ description: "What the destination receives on-chain: amount - fee" }),
    currencyType: CurrencyTypeSchema,
    network: CurrencyTypeSchema,
    walletAddress: Type.String(),
    externalUserId: nullable(Type.String()),
    reference: nullable(Type.String()),
    blockchainTxHash: nullable(Type.String()),
    rejectionReason: nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
    confirmedAt: nullable(Type.String({ format: "date-time" })),
    approvals: Type.Optional(
      Type.Array(
        Type.Object({
          actorType: Type.Union([Type.Literal("user"), Type.Literal("api_key")]),
          actorId: Type.String({ description: "The member's user id, or the API key id" }),
          email: nullable(Type.String()),
          approvedAt: Type.String({ format: "date-time" }),
        }),
        {
          description:
            "Who approved it, oldest first (on a single request's read and on an approval's answer; not in lists)",
        },
      ),
    ),
    approvalsRequired: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2,
        description:
          "How many different approvers it needs: 2 above the settings' dualApprovalThreshold (four-eyes), else 1",
      }),
    ),
  },
  {
    title: "Withdrawal",
    description: "A withdrawal request: a payment from your balance to one of your users' addresses",
    examples: [
      {
        id: "tx_01JD7Z5A6B7C8D9E0F1G2H3J4K",
        transactionId: "tx_01JD7Z5A6B7C8D9E0F1G2H3J4K",
        status: "pending",
        amount: 25,
        fee: 1,
        netAmount: 24,
        currencyType: "USDT-TRC20",
        network: "USDT-TRC20",
        walletAddress: "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8",
        externalUserId: "user-311",
        reference: "cashout-88",
        blockchainTxHash: null,
        rejectionReason: null,
        createdAt: "2026-01-15T11:00:00.000Z",
        updatedAt: "2026-01-15T11:00:00.000Z",
        confirmedAt: null,
      },
    ],
  },
);

export const CreatePayoutBody = Type.Object(
  {
    amount: AmountInput,
    currencyType: CurrencyTypeSchema,
    walletAddress: Type.String({ minLength: 1, maxLength: 100 }),
    otp: Type.String({
      minLength: 1,
      maxLength: 10,
      description: "The payout code e-mailed by POST /api/v1/auth/otp (purpose `payout`)",
    }),
    totp: Type.Optional(
      Type.String({
        maxLength: 16,
        description: "Production, when 2FA is on: the current code of the authenticator app",
      }),
    ),
  },
  { additionalProperties: false },
);

/** The payout object. */
export const PayoutSchema = Type.Object(
  {
    id: Type.String({ description: "Same value as transactionId" }),
    transactionId: Type.String(),
    status: PayoutStatusSchema,
    amount: Type.Number(),
    fee: Type.Number(),
    netAmount: Type.Number(),
    currencyType: CurrencyTypeSchema,
    network: CurrencyTypeSchema,
    walletAddress: Type.String(),
    blockchainTxHash: nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    confirmedAt: nullable(Type.String({ format: "date-time" })),
  },
  {
    title: "Payout",
    description: "A payment from your balance to an address of your own, sent from the dashboard",
    examples: [
      {
        id: "tx_01JD80A1B2C3D4E5F6G7H8J9K0",
        transactionId: "tx_01JD80A1B2C3D4E5F6G7H8J9K0",
        status: "completed",
        amount: 500,
        fee: 1,
        netAmount: 499,
        currencyType: "USDT-ERC20",
        network: "USDT-ERC20",
        walletAddress: "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        blockchainTxHash: "0x8a3f5c7e9b1d2f4a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a",
        createdAt: "2026-01-15T12:00:00.000Z",
        confirmedAt: "2026-01-15T12:01:30.000Z",
      },
    ],
  },
);

/** The approvals of a request as the API shows them (on its read and on an approval's answer). */
export function presentApprovals(approvals: readonly RecordedApproval[], required: number) {
  return {
    approvals: approvals.map((a) => ({
      actorType: a.actorType,
      actorId: a.actorId,
      email: a.email,
      approvedAt: a.approvedAt.toISOString(),
    })),
    approvalsRequired: required,
  };
}

/** The withdrawal object of docs/api-reference.md#schema-withdrawal (amounts in USDT). */
export function presentWithdrawal(t: TransactionRecord) {
  return {
    id: t.id,
    transactionId: t.id,
    status: statusOf(WITHDRAWAL_STATUSES, t),
    amount: formatAmount(t.amount),
    fee: formatAmount(t.fee),
    netAmount: formatAmount(t.netAmount),
    currencyType: t.currencyType,
    network: t.currencyType,
    walletAddress: t.walletAddress ?? "",
    externalUserId: t.externalUserId,
    reference: t.reference,
    blockchainTxHash: t.blockchainTxHash,
    rejectionReason: t.rejectionReason,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    confirmedAt: t.confirmedAt ? t.confirmedAt.toISOString() : null,
  };
}

/** The payout object of docs/api-reference.md#schema-payout. */
export function presentPayout(t: TransactionRecord) {
  return {
    id: t.id,
    transactionId: t.id,
    status: statusOf(PAYOUT_STATUSES, t),
    amount: formatAmount(t.amount),
    fee: formatAmount(t.fee),
    netAmount: formatAmount(t.netAmount),
    currencyType: t.currencyType,
    network: t.currencyType,
    walletAddress: t.walletAddress ?? "",
    blockchainTxHash: t.blockchainTxHash,
    createdAt: t.createdAt.toISOString(),
    confirmedAt: t.confirmedAt ? t.confirmedAt.toISOString() : null,
  };
}
