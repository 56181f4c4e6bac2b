import { Type } from "@sinclair/typebox";
import { PAYOUT_STATUSES, WITHDRAWAL_STATUSES } from "../../domain/withdrawal.js";
import { AmountInput } from "./deposits.js";
import { CurrencyTypeSchema, literals, nullable } from "./transaction.js";

export const WithdrawalStatusSchema = literals(WITHDRAWAL_STATUSES);

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

export const RejectBody = Type.Optional(
  Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false }),
);

/** The withdrawal object of CONTRACT §4.2. */
export const WithdrawalSchema = Type.Object({
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
});

export const CreatePayoutBody = Type.Object(
  {
    amount: AmountInput,
    currencyType: CurrencyTypeSchema,
    walletAddress: Type.String({ minLength: 1, maxLength: 100 }),
    otp: Type.String({
      minLength: 1,
      maxLength: 10,
      description: "The payout OTP e-mailed by POST /api/v1/auth/otp",
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

/** The payout object of CONTRACT §4.3. */
export const PayoutSchema = Type.Object({
  id: Type.String({ description: "Same value as transactionId" }),
  transactionId: Type.String(),
  status: literals(PAYOUT_STATUSES),
  amount: Type.Number(),
  fee: Type.Number(),
  netAmount: Type.Number(),
  currencyType: CurrencyTypeSchema,
  network: CurrencyTypeSchema,
  walletAddress: Type.String(),
  blockchainTxHash: nullable(Type.String()),
  createdAt: Type.String({ format: "date-time" }),
  confirmedAt: nullable(Type.String({ format: "date-time" })),
});
