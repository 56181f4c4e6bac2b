import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { CURRENCY_TYPES } from "../../domain/currency.js";

/**
 * The body a merchant's webhook endpoint receives, per transaction type: exactly the fields the
 * server sends (`webhooks/payload.ts` builds them; test/webhooks/delivery-shape.test.ts validates
 * captured deliveries of every type against these schemas and checks that no field is missing or
 * undeclared). Objects stay open (no `additionalProperties: false`): a receiver must accept fields
 * added later.
 */

const enumOf = <const T extends readonly string[]>(values: T, description?: string) =>
  Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...(description ? { description } : {}) });
const nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Timestamp = Type.String({ format: "date-time" });
const Currency = enumOf(CURRENCY_TYPES);

/** The fields every delivery's `data` carries; `type`, `status`, `metadata`, `rejectionReason` vary. */
function dataFields() {
  return {
    transactionId: Type.String({ description: "The transaction this event is about" }),
    id: Type.String({ description: "Same value as transactionId" }),
    clientId: Type.String({ description: "Your merchant id" }),
    amount: Type.Number({ description: "In the token (USDT, USDC)" }),
    fee: Type.Number({ description: "In the token (USDT, USDC)" }),
    netAmount: Type.Number({
      description:
        "In the token. Deposits: what was credited minus the fee; withdrawals and payouts: amount minus fee",
    }),
    actualBalance: nullable(
      Type.Number({ description: "Deposits: what arrived on-chain (in the token); null for other types" }),
    ),
    currencyType: Currency,
    network: enumOf(CURRENCY_TYPES, "Same value as currencyType"),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    confirmedAt: nullable(Timestamp),
    blockchainTxHash: nullable(Type.String()),
    walletAddress: nullable(
      Type.String({
        description: "Deposits: the address paid to; withdrawals and payouts: the destination",
      }),
    ),
    orderId: nullable(Type.String({ description: "The checkout session's orderId" })),
    reference: nullable(Type.String({ description: "The withdrawal request's reference" })),
    externalUserId: nullable(Type.String()),
    checkoutSessionId: nullable(
      Type.String({ description: "A late payment: the checkout session it was made to" }),
    ),
    environment: enumOf(["sandbox", "production"] as const, "Where the event happened"),
    wrongNetwork: Type.Optional(
      Type.Literal(true, {
        description:
          "Only on a deposit paid on another network than its session or wallet address was made for: " +
          "its own deposit in the currency type it arrived as (currencyType), never counted toward the session; absent otherwise",
      }),
    ),
    holdReason: Type.Optional(
      Type.String({
        maxLength: 300,
        description:
          "Only on a deposit that is or was `held` (frozen or refused sender): `token_blacklist` or `screening: <reason>`; absent otherwise",
      }),
    ),
    paymentLinkId: Type.Optional(
      Type.String({
        description:
          "Only on the deposit of a checkout session opened from a payment link: the link's id; absent otherwise",
      }),
    ),
  };
}

const NullField = (description: string) => Type.Null({ description });

/** A deposit's checkout-session price in fiat (docs/decisions/prices.md): null when it has none. */
function priceFields(none: string) {
  return {
    priceAmount: nullable(Type.Number({ description: `The session's price in priceCurrency; ${none}` })),
    priceCurrency: nullable(Type.String({ description: "ISO 4217 code of priceAmount" })),
    exchangeRate: nullable(
      Type.String({
        description:
          "The rate locked at the session's creation: token units per unit of priceCurrency, exact decimal text",
      }),
    ),
    rateSource: nullable(Type.String({ description: "Where the rate came from: fixed, coinbase or kraken" })),
    rateAt: nullable(Timestamp),
  };
}

function delivery<D extends TSchema>(title: string, description: string, data: D) {
  return Type.Object(
    {
      success: Type.Literal(true),
      message: Type.String({ description: 'A short text, e.g. "Deposit confirmed"' }),
      data,
    },
    { title, description },
  );
}

export const DepositWebhookData = Type.Object({
  type: Type.Literal("deposit"),
  status: enumOf(
    ["confirmed", "failed"] as const,
    "failed: the session expired short (a partial payment is still credited)",
  ),
  ...dataFields(),
  metadata: nullable(
    Type.Record(Type.String(), Type.Unknown(), {
      description: "The checkout session's metadata (also for a late payment); null for other deposits",
    }),
  ),
  ...priceFields("null unless the checkout session (also of a late payment) was priced in fiat"),

  rejectionReason: NullField("Always null for deposits"),
});

export const WithdrawalWebhookData = Type.Object({
  type: Type.Literal("withdrawal"),
  status: enumOf(
    ["pending", "completed", "failed", "rejected"] as const,
    "pending: waiting for your approval; failed and rejected release the held amount",
  ),
  ...dataFields(),
  metadata: NullField("Always null for withdrawals"),
  rejectionReason: nullable(Type.String({ description: "The reason given when rejecting, if any" })),
});

export const PayoutWebhookData = Type.Object({
  type: Type.Literal("payout"),
  status: enumOf(["completed", "failed"] as const, "failed releases the held amount"),
  ...dataFields(),
  metadata: NullField("Always null for payouts"),
  rejectionReason: NullField("Always null for payouts"),
});

export const TestWebhookData = Type.Object({
  type: Type.Literal("test"),
  status: Type.Literal("test"),
  ...dataFields(),
  metadata: NullField("Always null for test deliveries"),
  rejectionReason: NullField("Always null for test deliveries"),
  ...priceFields("always null for test deliveries"),
});

export const DepositWebhook = delivery(
  "DepositWebhook",
  "A deposit was confirmed or failed (one delivery per deposit).",
  DepositWebhookData,
);
export const WithdrawalWebhook = delivery(
  "WithdrawalWebhook",
  "A withdrawal request is pending approval, or was completed, failed or rejected.",
  WithdrawalWebhookData,
);
export const PayoutWebhook = delivery(
  "PayoutWebhook",
  "A payout was completed or failed.",
  PayoutWebhookData,
);
export const TestWebhook = delivery(
  "TestWebhook",
  "Sent by POST /api/v1/webhook/test (header X-Webhook-Test: true); zero amounts, never money.",
  TestWebhookData,
);

/** Every delivery body, by `data.type`. */
export const WebhookDeliveries = {
  deposit: DepositWebhook,
  withdrawal: WithdrawalWebhook,
  payout: PayoutWebhook,
  test: TestWebhook,
} as const;

export const WebhookDelivery = Type.Union([DepositWebhook, WithdrawalWebhook, PayoutWebhook, TestWebhook]);
export type WebhookDeliveryBody = Static<typeof WebhookDelivery>;

/** The request headers of a delivery (names in lower case, as HTTP/1.1 servers see them). */
export const WebhookDeliveryHeaders = Type.Object({
  "content-type": Type.Literal("application/json"),
  "user-agent": Type.String({ description: "stablegate-webhooks/1.0" }),
  "x-webhook-source": Type.Literal("stablegate"),
  "x-transaction-id": Type.String({ description: "Same value as data.transactionId" }),
  "x-webhook-signature": Type.String({
    pattern: "^sha256=[0-9a-f]{64}$",
    description: "sha256= + hex HMAC-SHA256 of the exact body bytes, keyed with the current webhook secret",
  }),
  "webhook-id": Type.String({
    description: "The event id (webhookEventId): the same on every retry, your deduplication key",
  }),
  "webhook-timestamp": Type.String({ pattern: "^[0-9]+$", description: "Unix seconds of this attempt" }),
  "webhook-signature": Type.String({
    description:
      "Standard Webhooks: space-separated v1,<base64 HMAC-SHA256 of id.timestamp.body>; for 24 h after a rotation one per secret (new first)",
  }),
  "x-webhook-test": Type.Optional(Type.Literal("true", { description: "Only on test deliveries" })),
});
