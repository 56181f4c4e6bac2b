import { Type } from "@sinclair/typebox";
import { CurrencyTypeSchema, nullable, TransactionStatusSchema } from "./transaction.js";

/** An amount in a request: a JSON number or a numeric string (CONTRACT §3); checked by `amountField`. */
export const AmountInput = Type.Union([Type.Number(), Type.String({ maxLength: 64 })], {
  description: "USDT, positive, at most 6 decimals, at most 1000000000",
});

export const CreateCheckoutSessionBody = Type.Object(
  {
    amount: AmountInput,
    currencyType: CurrencyTypeSchema,
    callbackUrl: Type.Optional(
      Type.String({
        maxLength: 2048,
        description:
          "https URL; the same validation as webhookUrl (ports in WEBHOOK_ALLOWED_PORTS). Setting it needs x-api-secret on the API-key channel (401 INVALID_AUTH without it)",
      }),
    ),
    orderId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    expiresInMinutes: Type.Optional(
      Type.Number({
        description: "Default 30; from CHECKOUT_MIN_EXPIRY_SECONDS up to 1440; fractions allowed",
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

/** The session object (CONTRACT §4.1). */
export const CheckoutSessionSchema = Type.Object({
  id: Type.String({ description: "Same value as transactionId" }),
  transactionId: Type.String(),
  status: TransactionStatusSchema,
  amount: Type.Number(),
  currencyType: CurrencyTypeSchema,
  network: CurrencyTypeSchema,
  walletAddress: Type.String({ description: "The address the customer pays to" }),
  expiresAt: Type.String({ format: "date-time" }),
  checkoutUrl: Type.String({ description: "The hosted payment page" }),
  callbackUrl: nullable(Type.String()),
  orderId: nullable(Type.String()),
  metadata: nullable(Type.Record(Type.String(), Type.Unknown())),
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
});

export const GenerateWalletBody = Type.Object(
  {
    currencyType: CurrencyTypeSchema,
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    externalUserId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const DepositWalletSchema = Type.Object({
  id: Type.String(),
  address: Type.String(),
  currencyType: CurrencyTypeSchema,
  network: CurrencyTypeSchema,
  label: nullable(Type.String()),
  externalUserId: nullable(Type.String()),
  createdAt: Type.String({ format: "date-time" }),
});
