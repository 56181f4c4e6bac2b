import { metadataErrors, returnUrlErrors } from "./checkout.js";
import type { CurrencyType } from "./currency.js";
import type { Environment } from "./environment.js";
import type { FieldError } from "./errors.js";
import { amountField } from "./money.js";

/**
 * Payment links (issue #41, docs/decisions/payment-links.md): the pure rules. A link is a reusable
 * page (`{base}/l/{id}`) that opens an ordinary checkout session per payer. It prices each payment
 * in one of three ways: a token `amount`, a fiat price (`priceAmount` + `priceCurrency`, converted
 * when a session is opened), or neither (an open amount the payer enters between `minAmount` and
 * `maxAmount`).
 */

/** How a link prices a payment. Token amounts in base units. */
export type LinkPrice =
  | { kind: "fixed"; amount: bigint }
  /** `priceAmount` in 10^-6 units of `priceCurrency` (parsed like a token amount, as a session's price). */
  | { kind: "fiat"; priceAmount: bigint; priceCurrency: string }
  | { kind: "open"; minAmount: bigint | null; maxAmount: bigint | null };

export interface PaymentLinkRecord {
  id: string;
  merchantId: string;
  environment: Environment;
  title: string;
  description: string | null;
  price: LinkPrice;
  currencyTypes: CurrencyType[];
  orderIdPrefix: string | null;
  metadata: Record<string, unknown> | null;
  maxPayments: number | null;
  expiresAt: Date | null;
  successUrl: string | null;
  active: boolean;
  /** Sessions ever opened from the link: the `n` of the next order id is this + 1. */
  sessionsOpened: number;
  deactivatedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What the link's sessions add up to (read from their deposit transactions). */
export interface LinkPayments {
  /** Sessions paid (`confirmed`). */
  payments: number;
  /** What those sessions received, in base units (every token of the link: USD stablecoins). */
  totalPaid: bigint;
  /** Sessions that hold a slot of `maxPayments`: open (`pending`) or paid. */
  reserved: number;
}

export const NO_PAYMENTS: LinkPayments = { payments: 0, totalPaid: 0n, reserved: 0 };

/** The request to create a link, as the route parsed it (amounts still as sent). */
export interface PaymentLinkInput {
  amount?: unknown;
  priceAmount?: unknown;
  priceCurrency?: string | undefined;
  minAmount?: unknown;
  maxAmount?: unknown;
  currencyTypes?: CurrencyType[] | undefined;
  title: string;
  description?: string | undefined;
  orderIdPrefix?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  maxPayments?: number | undefined;
  expiresAt?: string | undefined;
  successUrl?: string | undefined;
}

/** A validated new link (without its id and timestamps). */
export type NewPaymentLink = Pick<
  PaymentLinkRecord,
  | "title"
  | "description"
  | "price"
  | "currencyTypes"
  | "orderIdPrefix"
  | "metadata"
  | "maxPayments"
  | "expiresAt"
  | "successUrl"
>;

const ISO_4217 = /^[A-Z]{3}$/;

/**
 * Checks a new link against the rules of docs/merchants/payment-links.md: one way of pricing,
 * bounds in order, currency types enabled here (default: all enabled), metadata ≤ 4 KB, a future
 * `expiresAt`, a `successUrl` the payer may be sent to. Returns the link or every field's error.
 */
export function validatePaymentLink(
  input: PaymentLinkInput,
  ctx: { environment: Environment; now: Date; enabled: readonly CurrencyType[] },
): { link: NewPaymentLink; errors: [] } | { link?: undefined; errors: FieldError[] } {
  const errors: FieldError[] = [];
  let price: LinkPrice | undefined;
  const has = (v: unknown) => v !== undefined && v !== null;
  const isFiat = has(input.priceAmount) || has(input.priceCurrency);
  if (has(input.amount) && isFiat) {
    errors.push({
      field: "priceAmount",
      message: "give either amount or priceAmount with priceCurrency, not both",
    });
  } else if (has(input.amount)) {
    const a = amountField("amount", input.amount);
    errors.push(...a.errors);
    if (a.units !== undefined) price = { kind: "fixed", amount: a.units };
  } else if (isFiat) {
    const p = has(input.priceAmount) ? amountField("priceAmount", input.priceAmount) : undefined;
    if (p) errors.push(...p.errors);
    else errors.push({ field: "priceAmount", message: "is required with priceCurrency" });
    const currency = input.priceCurrency;
    if (!currency) errors.push({ field: "priceCurrency", message: "is required with priceAmount" });
    else if (!ISO_4217.test(currency))
      errors.push({ field: "priceCurrency", message: "must be an ISO 4217 currency code such as EUR" });
    if (p?.units !== undefined && currency && ISO_4217.test(currency))
      price = { kind: "fiat", priceAmount: p.units, priceCurrency: currency };
  }
  const bounded = has(input.minAmount) || has(input.maxAmount);
  if (bounded && (has(input.amount) || isFiat)) {
    errors.push({
      field: has(input.minAmount) ? "minAmount" : "maxAmount",
      message: "only for an open amount (without amount or priceAmount)",
    });
  } else if (!has(input.amount) && !isFiat) {
    const min = has(input.minAmount) ? amountField("minAmount", input.minAmount) : undefined;
    const max = has(input.maxAmount) ? amountField("maxAmount", input.maxAmount) : undefined;
    errors.push(...(min?.errors ?? []), ...(max?.errors ?? []));
    const lo = min?.units ?? null;
    const hi = max?.units ?? null;
    if (lo !== null && hi !== null && lo > hi)
      errors.push({ field: "minAmount", message: "must not be greater than maxAmount" });
    price = { kind: "open", minAmount: lo, maxAmount: hi };
  }

  const currencyTypes = [...new Set(input.currencyTypes ?? ctx.enabled)];
  if (currencyTypes.length === 0) errors.push({ field: "currencyTypes", message: "must name at least one" });
  for (const c of currencyTypes) {
    if (!ctx.enabled.includes(c))
      errors.push({ field: "currencyTypes", message: `${c} is not enabled on this service` });
  }
  errors.push(...metadataErrors(input.metadata));
  let expiresAt: Date | null = null;
  if (input.expiresAt !== undefined) {
    expiresAt = new Date(input.expiresAt);
    if (Number.isNaN(expiresAt.getTime()))
      errors.push({ field: "expiresAt", message: "must be a date-time such as 2026-12-31T23:59:59Z" });
    else if (expiresAt.getTime() <= ctx.now.getTime())
      errors.push({ field: "expiresAt", message: "must be in the future" });
  }
  if (input.successUrl !== undefined)
    errors.push(...returnUrlErrors("successUrl", input.successUrl, ctx.environment));
  if (errors.length > 0 || price === undefined) return { errors };
  return {
    errors: [],
    link: {
      title: input.title,
      description: input.description ?? null,
      price,
      currencyTypes,
      orderIdPrefix: input.orderIdPrefix ?? null,
      metadata: input.metadata ?? null,
      maxPayments: input.maxPayments ?? null,
      expiresAt,
      successUrl: input.successUrl ?? null,
    },
  };
}

/**
 * Whether a link takes a new payment at `now`: `open`, or why not — deactivated, past its
 * `expiresAt`, all its `maxPayments` paid (`sold_out`: for good), or every slot held by a paid or
 * still open session (`full`: a slot frees when an open session fails).
 */
export type LinkState = "open" | "inactive" | "expired" | "sold_out" | "full";

export function linkState(
  link: Pick<PaymentLinkRecord, "active" | "expiresAt" | "maxPayments">,
  payments: Pick<LinkPayments, "payments" | "reserved">,
  now: Date,
): LinkState {
  if (!link.active) return "inactive";
  if (link.expiresAt !== null && link.expiresAt.getTime() <= now.getTime()) return "expired";
  if (link.maxPayments !== null && payments.payments >= link.maxPayments) return "sold_out";
  if (link.maxPayments !== null && payments.reserved >= link.maxPayments) return "full";
  return "open";
}

/**
 * The amount of a payment of an open-amount link, as the payer typed it (a decimal; a comma is
 * read as the decimal point), within the link's bounds.
 */
export function openAmount(
  price: Extract<LinkPrice, { kind: "open" }>,
  input: unknown,
): { units: bigint; errors: [] } | { units?: undefined; errors: FieldError[] } {
  const text = typeof input === "string" ? input.trim().replace(",", ".") : input;
  if (text === undefined || text === "") return { errors: [{ field: "amount", message: "is required" }] };
  const a = amountField("amount", text);
  if (a.units === undefined) return { errors: a.errors };
  if (price.minAmount !== null && a.units < price.minAmount)
    return { errors: [{ field: "amount", message: "is below the minimum" }] };
  if (price.maxAmount !== null && a.units > price.maxAmount)
    return { errors: [{ field: "amount", message: "is above the maximum" }] };
  return { units: a.units, errors: [] };
}

/** The order id of the link's `n`-th session: `orderIdPrefix` + n; none without a prefix. */
export function linkOrderId(prefix: string | null, n: number): string | null {
  return prefix === null ? null : `${prefix}${n}`;
}

/** `{base}/l/{id}` for the environment's base URL. */
export function paymentLinkUrl(baseUrl: string, id: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/l/${encodeURIComponent(id)}`;
}
