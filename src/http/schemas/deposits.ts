import { Type } from "@sinclair/typebox";
import {
  type CheckoutSessionRecord,
  presentSessionPrice,
  type SessionDetection,
} from "../../domain/checkout.js";
import { formatAmount } from "../../domain/money.js";
import type { TransactionStatus } from "../../domain/transaction.js";
import { CurrencyTypeSchema, nullable } from "./transaction.js";

/** The statuses a checkout session (a deposit) can have. */
export const CHECKOUT_SESSION_STATUSES = ["pending", "confirmed", "failed"] as const;

/**
 * A session's status as documented: only the deposit statuses. Its static type stays the
 * transaction status the presenter returns (`presentCheckoutSession` reads the shared record).
 */
export const CheckoutSessionStatusSchema = Type.Unsafe<TransactionStatus>({
  type: "string",
  enum: [...CHECKOUT_SESSION_STATUSES],
  title: "CheckoutSessionStatus",
  description:
    "`pending` until the address has received `amount` with the required confirmations (then `confirmed`) " +
    "or `expiresAt` has passed without it (then `failed`)",
});

/** An amount in a request: a JSON number or a numeric string (docs/api-reference.md#amounts); checked by `amountField`. */
export const AmountInput = Type.Union([Type.Number(), Type.String({ maxLength: 64 })], {
  description: "In the token of currencyType (USDT, USDC), positive, at most 6 decimals, at most 1000000000",
});

/** A URL the hosted page sends the payer to (`successUrl`, `cancelUrl`): checked by `returnUrlErrors`. */
const ReturnUrl = (description: string) =>
  Type.Optional(
    Type.String({
      maxLength: 2048,
      description: `${description}. An absolute https URL (plain http in the sandbox only), without credentials; never called by the gateway`,
    }),
  );

export const CreateCheckoutSessionBody = Type.Object(
  {
    amount: Type.Optional(
      Type.Union([Type.Number(), Type.String({ maxLength: 64 })], {
        description:
          "In the token of currencyType (USDT, USDC), positive, at most 6 decimals, at most 1000000000. " +
          "Required unless the price is given in fiat (`priceAmount` + `priceCurrency`); never both",
      }),
    ),
    priceAmount: Type.Optional(
      Type.Union([Type.Number(), Type.String({ maxLength: 64 })], {
        description:
          "The price in `priceCurrency` instead of `amount` (the same rules as an amount). The gateway " +
          "converts it at its exchange rate source's current rate, locks that rate, and asks for the " +
          "token amount rounded up to 6 decimals (503 RATE_UNAVAILABLE without a fresh rate)",
      }),
    ),
    priceCurrency: Type.Optional(
      Type.String({
        pattern: "^[A-Z]{3}$",
        description:
          "ISO 4217 code of `priceAmount`, e.g. EUR; one the gateway's exchange rate source quotes",
      }),
    ),
    successUrl: ReturnUrl("Where the hosted page sends the payer once the session is `confirmed` (a button)"),
    cancelUrl: ReturnUrl("Where the hosted page sends the payer who cancels, or after the session failed"),
    currencyType: CurrencyTypeSchema,
    callbackUrl: Type.Optional(
      Type.String({
        maxLength: 2048,
        description:
          "https URL that receives this session's webhook (instead of the webhook URL of the environment); " +
          "the same rules as the webhook URL. Setting it needs `x-api-secret` on the API-key channel " +
          "(401 INVALID_AUTH without it)",
      }),
    ),
    orderId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    expiresInMinutes: Type.Optional(
      Type.Number({
        description: "Default 30; at most 1440; fractions allowed (the operator sets the minimum)",
      }),
    ),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "Your own data, a JSON object of at most 4 KB",
      }),
    ),
  },
  { additionalProperties: false },
);

/** The session object. */
export const CheckoutSessionSchema = Type.Object(
  {
    id: Type.String({ description: "Same value as transactionId" }),
    transactionId: Type.String(),
    status: CheckoutSessionStatusSchema,
    amount: Type.Number({ description: "In the token (USDT, USDC)" }),
    currencyType: CurrencyTypeSchema,
    network: CurrencyTypeSchema,
    walletAddress: Type.String({ description: "The address the customer pays to" }),
    expiresAt: Type.String({ format: "date-time" }),
    checkoutUrl: Type.String({ description: "The hosted payment page" }),
    callbackUrl: nullable(Type.String()),
    orderId: nullable(Type.String()),
    metadata: nullable(Type.Record(Type.String(), Type.Unknown())),
    paymentLinkId: nullable(
      Type.String({
        description: "The payment link the session was opened from; null: created through the API",
      }),
    ),
    actualBalance: Type.Number({ description: "What has arrived on-chain so far" }),
    blockchainTxHash: nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    confirmedAt: nullable(Type.String({ format: "date-time" })),
    detectedAt: nullable(
      Type.String({
        format: "date-time",
        description:
          "Block time of the first transfer to the address mined before expiresAt (null until one is seen)",
      }),
    ),
    detectedAmount: Type.Number({
      description: "Sum of the transfers mined before expiresAt, confirmed or still confirming",
    }),
    confirmations: Type.Object(
      {
        current: Type.Integer({
          minimum: 0,
          description: "Confirmations of the least-confirmed transfer counted",
        }),
        required: Type.Integer({ minimum: 1, description: "Confirmations the chain requires" }),
      },
      { description: "How far the detected payment is confirmed" },
    ),
    priceAmount: nullable(
      Type.Number({
        description: "The price in priceCurrency the session was created with; null: priced in the token",
      }),
    ),
    priceCurrency: nullable(Type.String({ description: "ISO 4217 code of priceAmount" })),
    exchangeRate: nullable(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?$",
        description:
          "The rate locked at creation: token units per unit of priceCurrency, exact decimal text " +
          "(amount = priceAmount × exchangeRate rounded up to 6 decimals)",
      }),
    ),
    rateSource: nullable(Type.String({ description: "Where the rate came from: fixed, coinbase or kraken" })),
    rateAt: nullable(Type.String({ format: "date-time", description: "When the source quoted the rate" })),
    successUrl: nullable(
      Type.String({ description: "Where the hosted page sends the payer once confirmed" }),
    ),
    cancelUrl: nullable(Type.String({ description: "Where the hosted page sends the payer who cancels" })),
  },
  {
    title: "CheckoutSession",
    description: "One payment of `amount` to a fresh deposit address, with a hosted page and a deadline",
    examples: [
      {
        id: "tx_01JD7Y2K8M3N4P5Q6R7S8T9V0W",
        transactionId: "tx_01JD7Y2K8M3N4P5Q6R7S8T9V0W",
        status: "pending",
        amount: 50.004,
        currencyType: "USDT-TRC20",
        network: "USDT-TRC20",
        walletAddress: "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE",
        expiresAt: "2026-01-15T10:30:00.000Z",
        checkoutUrl: "https://sandbox.stablegate.test/pay/tx_01JD7Y2K8M3N4P5Q6R7S8T9V0W",
        callbackUrl: null,
        orderId: "order-1042",
        metadata: { cartId: "c-77" },
        paymentLinkId: null,
        actualBalance: 0,
        blockchainTxHash: null,
        createdAt: "2026-01-15T10:00:00.000Z",
        confirmedAt: null,
        detectedAt: null,
        detectedAmount: 0,
        confirmations: { current: 0, required: 19 },
        priceAmount: 46.3,
        priceCurrency: "EUR",
        exchangeRate: "1.08",
        rateSource: "fixed",
        rateAt: "2026-01-15T10:00:00.000Z",
        successUrl: "https://shop.example/orders/1042/thanks",
        cancelUrl: "https://shop.example/cart",
      },
    ],
  },
);

export const GenerateWalletBody = Type.Object(
  {
    currencyType: CurrencyTypeSchema,
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    externalUserId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const DepositWalletSchema = Type.Object(
  {
    id: Type.String(),
    address: Type.String(),
    currencyType: CurrencyTypeSchema,
    network: CurrencyTypeSchema,
    label: nullable(Type.String()),
    externalUserId: nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
  },
  { description: "A permanent deposit address" },
);

/** The session object of docs/api-reference.md#schema-checkoutsession (amounts in USDT; `id` = `transactionId`). */
export function presentCheckoutSession(
  s: CheckoutSessionRecord,
  checkoutUrl: string,
  detection: SessionDetection,
) {
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
    paymentLinkId: t.paymentLinkId,
    actualBalance: t.actualBalance === null ? 0 : formatAmount(t.actualBalance),
    blockchainTxHash: t.blockchainTxHash,
    createdAt: t.createdAt.toISOString(),
    confirmedAt: t.confirmedAt ? t.confirmedAt.toISOString() : null,
    detectedAt: detection.detectedAt ? detection.detectedAt.toISOString() : null,
    detectedAmount: formatAmount(detection.detectedAmount),
    confirmations: { ...detection.confirmations },
    ...presentSessionPrice(s.price),
    successUrl: s.successUrl,
    cancelUrl: s.cancelUrl,
  };
}
