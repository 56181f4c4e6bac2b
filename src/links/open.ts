import { openCheckoutSessionIn } from "../deposits/index.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError, type FieldError } from "../domain/errors.js";
import { formatUnits } from "../domain/money.js";
import {
  type LinkState,
  linkOrderId,
  linkState,
  NO_PAYMENTS,
  openAmount,
  type PaymentLinkRecord,
} from "../domain/payment-link.js";
import { linkPayments } from "../transactions/index.js";
import type { PaymentLinkDeps } from "./manage.js";
import { countSessionOpened, findPublicPaymentLink, lockPublicPaymentLink } from "./store.js";

/**
 * The payer's side of a payment link (`GET`/`POST /l/{id}`, docs/decisions/payment-links.md): what
 * the page shows, and opening an ordinary checkout session from it.
 *
 * `maxPayments` under concurrency: the session is opened in ONE transaction that first locks the
 * link's row (`select … for update`), then counts the link's sessions that hold a slot (open or
 * paid, read after the lock: the sessions the previous holder committed are counted), and opens
 * one only while fewer than `maxPayments` do. So at most `maxPayments` sessions are ever open or
 * paid at once, and at most `maxPayments` are paid; a session that fails (expires unpaid) frees
 * its slot. Opening is thus serialised per link (not across links).
 */

/** What the link's page shows. */
export interface LinkPageView {
  link: PaymentLinkRecord;
  state: LinkState;
  /** The networks the payer may choose: the link's currency types still enabled here. */
  networks: CurrencyType[];
}

/** The link behind `/l/{id}` in the environment of the base URL asked, or null (404). */
export async function linkPage(
  deps: PaymentLinkDeps,
  environment: Environment,
  id: string,
): Promise<LinkPageView | null> {
  const link = await findPublicPaymentLink(deps.db, environment, id);
  if (!link) return null;
  const payments = (await linkPayments(deps.db, [id])).get(id) ?? NO_PAYMENTS;
  return {
    link,
    state: linkState(link, payments, new Date(deps.clock.now())),
    networks: networksOf(deps, link),
  };
}

function networksOf(deps: PaymentLinkDeps, link: PaymentLinkRecord): CurrencyType[] {
  const enabled = deps.enabledCurrencyTypes();
  return link.currencyTypes.filter((c) => enabled.includes(c));
}

/** What the payer chose on the page (form fields, as sent). */
export interface LinkPaymentChoice {
  currencyType?: string | undefined;
  amount?: string | undefined;
}

/**
 * The outcome of a payer's choice (expected outcomes are values): a session opened (continue on its
 * `/pay/{id}`), the link closed (`inactive`, `expired`, `sold_out`, or `full` while every slot is
 * held), the choice refused (`invalid`, nothing created), the chain or the rate unavailable.
 */
export type OpenLinkResult =
  | { kind: "opened"; sessionId: string; checkoutUrl: string }
  | { kind: "not_found" }
  | { kind: "closed"; view: LinkPageView }
  | { kind: "invalid"; view: LinkPageView; errors: FieldError[] }
  | { kind: "unavailable"; view: LinkPageView };

export async function openLinkSession(
  deps: PaymentLinkDeps,
  environment: Environment,
  id: string,
  choice: LinkPaymentChoice,
): Promise<OpenLinkResult> {
  const page = await linkPage(deps, environment, id);
  if (!page) return { kind: "not_found" };
  if (page.state !== "open" && page.state !== "full") return { kind: "closed", view: page };
  const { link } = page;
  const errors: FieldError[] = [];
  const currencyType = page.networks.find((c) => c === choice.currencyType);
  if (!currencyType) errors.push({ field: "currencyType", message: "choose one of the networks offered" });
  let amount: bigint | undefined;
  if (link.price.kind === "fixed") amount = link.price.amount;
  else if (link.price.kind === "open") {
    const a = openAmount(link.price, choice.amount);
    errors.push(...a.errors);
    amount = a.units;
  }
  if (errors.length > 0 || !currencyType) return { kind: "invalid", view: page, errors };
  const price = link.price;
  try {
    const opened = await deps.db.transaction().execute(async (trx) => {
      const locked = await lockPublicPaymentLink(trx, environment, id);
      if (!locked) return null;
      const now = new Date(deps.clock.now());
      const payments = (await linkPayments(trx, [id])).get(id) ?? NO_PAYMENTS;
      const state = linkState(locked, payments, now);
      if (state !== "open") return { kind: "closed" as const, state };
      const n = await countSessionOpened(trx, id);
      const session = await openCheckoutSessionIn(
        trx,
        deps.checkout,
        { merchantId: locked.merchantId, environment },
        {
          ...(price.kind === "fiat"
            ? { priceAmount: formatUnits(price.priceAmount), priceCurrency: price.priceCurrency }
            : { amount: formatUnits(amount as bigint) }),
          currencyType,
          orderId: linkOrderId(locked.orderIdPrefix, n) ?? undefined,
          metadata: locked.metadata ?? undefined,
          successUrl: locked.successUrl ?? undefined,
          paymentLinkId: id,
        },
      );
      return { kind: "session" as const, session };
    });
    if (opened === null) return { kind: "not_found" };
    if (opened.kind === "closed") return { kind: "closed", view: { ...page, state: opened.state } };
    return {
      kind: "opened",
      sessionId: opened.session.session.transaction.id,
      checkoutUrl: opened.session.checkoutUrl,
    };
  } catch (err) {
    if (err instanceof AppError && err.code === "VALIDATION_ERROR") {
      const fields = (err.details as { fields?: FieldError[] } | undefined)?.fields ?? [];
      return { kind: "invalid", view: page, errors: fields };
    }
    if (err instanceof AppError && (err.code === "CHAIN_UNAVAILABLE" || err.code === "RATE_UNAVAILABLE"))
      return { kind: "unavailable", view: page };
    throw err;
  }
}
