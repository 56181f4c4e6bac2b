import { Type } from "@sinclair/typebox";
import { formatAmount } from "../../domain/money.js";
import type { PaymentLinkView } from "../../links/index.js";
import { CurrencyTypeSchema, nullable } from "./transaction.js";

/** An amount in a request: a JSON number or a numeric string (checked by `amountField`). */
const AmountLike = (description: string) =>
  Type.Optional(Type.Union([Type.Number(), Type.String({ maxLength: 64 })], { description }));

export const CreatePaymentLinkBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 200, description: "Shown to the payer" }),
    description: Type.Optional(Type.String({ maxLength: 2000, description: "Shown to the payer" })),
    amount: AmountLike(
      "The token amount of each payment (USDT, USDC; at most 6 decimals). Or `priceAmount` + " +
        "`priceCurrency`, or neither: the payer enters the amount (between `minAmount` and `maxAmount`)",
    ),
    priceAmount: AmountLike(
      "The price in `priceCurrency` instead of `amount`: each session converts it at the rate of that moment (as a checkout session's `priceAmount`)",
    ),
    priceCurrency: Type.Optional(Type.String({ maxLength: 8, description: "ISO 4217, e.g. EUR" })),
    minAmount: AmountLike("Open amount only: the least the payer may enter"),
    maxAmount: AmountLike("Open amount only: the most the payer may enter"),
    currencyTypes: Type.Optional(
      Type.Array(CurrencyTypeSchema, {
        minItems: 1,
        maxItems: 64,
        description:
          "The networks the payer picks from (default: every currency type enabled on the service)",
      }),
    ),
    orderIdPrefix: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: "Each session's orderId is this prefix and the session's number on the link (1, 2, …)",
      }),
    ),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "Your own data, a JSON object of at most 4 KB, copied to every session",
      }),
    ),
    maxPayments: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description:
          "At most this many paid sessions; while every slot is held by an open or paid session the page opens no other",
      }),
    ),
    expiresAt: Type.Optional(
      Type.String({
        format: "date-time",
        description: "After it the page opens no session (the link is closed)",
      }),
    ),
    successUrl: Type.Optional(
      Type.String({
        maxLength: 2048,
        description:
          "Where the hosted page sends the payer after `confirmed` (a button): https (plain http in the sandbox only)",
      }),
    ),
  },
  { additionalProperties: false },
);

export const PaymentLinkSchema = Type.Object(
  {
    id: Type.String(),
    url: Type.String({ description: "The payer's page, {base}/l/{id}" }),
    title: Type.String(),
    description: nullable(Type.String()),
    amount: nullable(
      Type.Number({ description: "The token amount of each payment; null: fiat price or open amount" }),
    ),
    priceAmount: nullable(
      Type.Number({ description: "The price in priceCurrency; null: priced in the token" }),
    ),
    priceCurrency: nullable(Type.String()),
    minAmount: nullable(Type.Number()),
    maxAmount: nullable(Type.Number()),
    currencyTypes: Type.Array(CurrencyTypeSchema),
    orderIdPrefix: nullable(Type.String()),
    metadata: nullable(Type.Record(Type.String(), Type.Unknown())),
    maxPayments: nullable(Type.Integer()),
    expiresAt: nullable(Type.String({ format: "date-time" })),
    successUrl: nullable(Type.String()),
    active: Type.Boolean({ description: "false once deactivated" }),
    payments: Type.Integer({ minimum: 0, description: "Sessions of the link paid (confirmed)" }),
    totalPaid: Type.Number({ description: "What those sessions received, in the token (USDT, USDC)" }),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
    deactivatedAt: nullable(Type.String({ format: "date-time" })),
  },
  {
    title: "PaymentLink",
    description: "A reusable page that opens a checkout session per payer",
    examples: [
      {
        id: "pl_3kTMd9Qx1yZa7bC2eF4gH6",
        url: "https://sandbox.stablegate.test/l/pl_3kTMd9Qx1yZa7bC2eF4gH6",
        title: "Workshop ticket",
        description: null,
        amount: 25,
        priceAmount: null,
        priceCurrency: null,
        minAmount: null,
        maxAmount: null,
        currencyTypes: ["USDT-TRC20", "USDT-ERC20"],
        orderIdPrefix: "ticket-",
        metadata: null,
        maxPayments: 20,
        expiresAt: null,
        successUrl: "https://shop.example/thanks",
        active: true,
        payments: 3,
        totalPaid: 75,
        createdAt: "2026-01-15T10:00:00.000Z",
        updatedAt: "2026-01-15T10:00:00.000Z",
        deactivatedAt: null,
      },
    ],
  },
);

/** The link object of docs/api-reference.md#schema-paymentlink (amounts in the token). */
export function presentPaymentLink(v: PaymentLinkView) {
  const { link, payments } = v;
  const p = link.price;
  return {
    id: link.id,
    url: v.url,
    title: link.title,
    description: link.description,
    amount: p.kind === "fixed" ? formatAmount(p.amount) : null,
    priceAmount: p.kind === "fiat" ? formatAmount(p.priceAmount) : null,
    priceCurrency: p.kind === "fiat" ? p.priceCurrency : null,
    minAmount: p.kind === "open" && p.minAmount !== null ? formatAmount(p.minAmount) : null,
    maxAmount: p.kind === "open" && p.maxAmount !== null ? formatAmount(p.maxAmount) : null,
    currencyTypes: link.currencyTypes,
    orderIdPrefix: link.orderIdPrefix,
    metadata: link.metadata,
    maxPayments: link.maxPayments,
    expiresAt: link.expiresAt ? link.expiresAt.toISOString() : null,
    successUrl: link.successUrl,
    active: link.active,
    payments: payments.payments,
    totalPaid: formatAmount(payments.totalPaid),
    createdAt: link.createdAt.toISOString(),
    updatedAt: link.updatedAt.toISOString(),
    deactivatedAt: link.deactivatedAt ? link.deactivatedAt.toISOString() : null,
  };
}
