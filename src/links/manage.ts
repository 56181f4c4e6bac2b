import type { Db } from "../db/database.js";
import type { CheckoutDeps } from "../deposits/index.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { ListParams } from "../domain/list.js";
import {
  type LinkPayments,
  NO_PAYMENTS,
  type PaymentLinkInput,
  type PaymentLinkRecord,
  paymentLinkUrl,
  validatePaymentLink,
} from "../domain/payment-link.js";
import {
  type IdempotencyContext,
  type IdempotentAnswer,
  type IdempotentCall,
  runIdempotent,
} from "../idempotency/index.js";
import type { Clock } from "../lib/clock.js";
import { linkPayments } from "../transactions/index.js";
import {
  deactivatePaymentLink,
  findPaymentLink,
  insertPaymentLink,
  listPaymentLinks as listLinkRows,
} from "./store.js";

/**
 * The merchant's use cases of payment links (docs/merchants/payment-links.md): create (once per
 * `Idempotency-Key`), list and read with what their sessions add up to, deactivate. Both channels
 * call the same functions; another merchant's link is 404 NOT_FOUND.
 */

export interface PaymentLinkDeps {
  db: Db;
  clock: Clock;
  idempotency: IdempotencyContext;
  /** The currency types enabled on this service (a link's default). */
  enabledCurrencyTypes(): readonly CurrencyType[];
  /** The base URL of the public pages in an environment (`{base}/l/{id}`). */
  baseUrl(environment: Environment): string;
  /** The checkout sessions' creation path: a link opens ordinary sessions through it (open.ts). */
  checkout: CheckoutDeps;
}

type Scope = { merchantId: string; environment: Environment };

/** A link as the API shows it: its record, its page's URL and what its sessions add up to. */
export interface PaymentLinkView {
  link: PaymentLinkRecord;
  url: string;
  payments: LinkPayments;
}

function view(deps: PaymentLinkDeps, link: PaymentLinkRecord, payments: LinkPayments): PaymentLinkView {
  return { link, url: paymentLinkUrl(deps.baseUrl(link.environment), link.id), payments };
}

/**
 * `POST /api/v1/public/payment-links`: checks the link (400 VALIDATION_ERROR naming each field;
 * a fiat price in a currency the rate source does not quote too), then creates it once per
 * `Idempotency-Key`.
 */
export async function createPaymentLink(
  deps: PaymentLinkDeps,
  scope: Scope,
  input: PaymentLinkInput,
  call: IdempotentCall<PaymentLinkView>,
): Promise<IdempotentAnswer> {
  const now = new Date(deps.clock.now());
  const checked = validatePaymentLink(input, {
    environment: scope.environment,
    now,
    enabled: deps.enabledCurrencyTypes(),
  });
  if (checked.link === undefined) throw AppError.validation(checked.errors);
  const link = checked.link;
  if (link.price.kind === "fiat" && !deps.checkout.rates.quotes(link.price.priceCurrency)) {
    throw AppError.validation([
      {
        field: "priceCurrency",
        message: `is not quoted by this gateway's exchange rate source (${deps.checkout.rates.name})`,
      },
    ]);
  }
  return runIdempotent(deps.idempotency, call.idempotency(), async (trx) =>
    call.answer(view(deps, await insertPaymentLink(trx, scope, newId("pl"), link, now), NO_PAYMENTS)),
  );
}

/** `GET …/payment-links/{id}`: the merchant's link with its payments; 404 otherwise. */
export async function getPaymentLink(
  deps: PaymentLinkDeps,
  scope: Scope,
  id: string,
): Promise<PaymentLinkView> {
  const link = await findPaymentLink(deps.db, scope, id);
  if (!link) throw new AppError("NOT_FOUND", "No payment link with this id.");
  const payments = (await linkPayments(deps.db, [id])).get(id) ?? NO_PAYMENTS;
  return view(deps, link, payments);
}

/** `GET …/payment-links`: a page of the merchant's links, each with its payments. */
export async function listPaymentLinks(
  deps: PaymentLinkDeps,
  scope: Scope,
  filter: { active?: boolean | undefined },
  page: ListParams,
): Promise<{ rows: PaymentLinkView[]; total: number }> {
  const { rows, total } = await listLinkRows(deps.db, scope, filter, page);
  const payments = await linkPayments(
    deps.db,
    rows.map((r) => r.id),
  );
  return { rows: rows.map((r) => view(deps, r, payments.get(r.id) ?? NO_PAYMENTS)), total };
}

/**
 * `POST …/payment-links/{id}/deactivate`: the page then says the link is closed and opens no
 * session (sessions already open go on). Deactivating an inactive link changes nothing.
 */
export async function deactivateLink(
  deps: PaymentLinkDeps,
  scope: Scope,
  id: string,
): Promise<PaymentLinkView> {
  const link = await deactivatePaymentLink(deps.db, scope, id, new Date(deps.clock.now()));
  if (!link) throw new AppError("NOT_FOUND", "No payment link with this id.");
  const payments = (await linkPayments(deps.db, [id])).get(id) ?? NO_PAYMENTS;
  return view(deps, link, payments);
}
