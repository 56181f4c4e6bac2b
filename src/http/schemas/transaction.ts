import { Type } from "@sinclair/typebox";
import { CURRENCY_TYPES } from "../../domain/currency.js";
import { TRANSACTION_STATUSES, TRANSACTION_TYPES } from "../../domain/transaction.js";

/** A string enum with its literal union as the static type (`options`: title, description). */
export const literals = <const T extends readonly string[]>(
  values: T,
  options: { title?: string; description?: string } = {},
) => Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });
export const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) =>
  Type.Union([t, Type.Null()]);

export const CurrencyTypeSchema = literals(CURRENCY_TYPES, {
  title: "CurrencyType",
  description:
    "The token and its network, <TOKEN>-<NETWORK> (USDT-TRC20, USDC-BASE, …); the enabled ones: GET /api/v1/public/currencies",
});
export const TransactionTypeSchema = literals(TRANSACTION_TYPES, { title: "TransactionType" });
export const TransactionStatusSchema = literals(TRANSACTION_STATUSES, {
  title: "TransactionStatus",
  description:
    "Deposits: pending, confirmed, failed; held (from a frozen or refused sender, until released: confirmed, or returned). Withdrawals: pending, processing, completed, failed, rejected. " +
    "Payouts: processing, completed, failed.",
});

/** The transaction object, as `presentTransaction` builds it. Amounts in USDT. */
export const TransactionSchema = Type.Object(
  {
    type: TransactionTypeSchema,
    transactionId: Type.String(),
    id: Type.String({ description: "Same value as transactionId" }),
    clientId: Type.String({ description: "The merchant's identifier" }),
    amount: Type.Number({ description: "In the token (USDT, USDC)" }),
    fee: Type.Number({ description: "In the token (USDT, USDC)" }),
    netAmount: Type.Number({ description: "In the token: amount - fee" }),
    actualBalance: nullable(Type.Number({ description: "On-chain balance at detection; deposits only" })),
    currencyType: CurrencyTypeSchema,
    network: CurrencyTypeSchema,
    status: TransactionStatusSchema,
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
    confirmedAt: nullable(Type.String({ format: "date-time" })),
    blockchainTxHash: nullable(Type.String()),
    walletAddress: nullable(Type.String()),
    orderId: nullable(Type.String()),
    reference: nullable(Type.String()),
    externalUserId: nullable(Type.String()),
    checkoutSessionId: nullable(Type.String()),
    wrongNetwork: Type.Optional(
      Type.Literal(true, {
        description:
          "Only on a deposit paid on another network than its address was made for: credited in the currency type it arrived as, apart from the session",
      }),
    ),
    holdReason: Type.Optional(
      Type.String({
        maxLength: 300,
        description:
          "Only on a deposit that is or was `held`: `token_blacklist` (the token's issuer froze its sender) or `screening: <reason>` (the screening provider refused it)",
      }),
    ),
    paymentLinkId: Type.Optional(
      Type.String({
        description: "Only on the deposit of a checkout session opened from a payment link: the link's id",
      }),
    ),
  },
  {
    title: "Transaction",
    description: "A deposit, withdrawal or payout: the record the balance moves with",
    examples: [
      {
        type: "deposit",
        transactionId: "tx_01JD7Y2K8M3N4P5Q6R7S8T9V0W",
        id: "tx_01JD7Y2K8M3N4P5Q6R7S8T9V0W",
        clientId: "mer_01JD7X0A1B2C3D4E5F6G7H8J9K",
        amount: 50,
        fee: 0.5,
        netAmount: 49.5,
        actualBalance: 50,
        currencyType: "USDT-TRC20",
        network: "USDT-TRC20",
        status: "confirmed",
        createdAt: "2026-01-15T10:00:00.000Z",
        updatedAt: "2026-01-15T10:02:10.000Z",
        confirmedAt: "2026-01-15T10:02:10.000Z",
        blockchainTxHash: "9f2c6a0e4b1d7c3e8a5f0b2d4c6e8a1f3b5d7c9e0a2b4c6d8e0f1a3b5c7d9e1f",
        walletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE",
        orderId: "order-1042",
        reference: null,
        externalUserId: null,
        checkoutSessionId: "tx_01JD7Y2K8M3N4P5Q6R7S8T9V0W",
      },
    ],
  },
);
