import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { FieldError } from "../domain/errors.js";
import { formatUnits } from "../domain/money.js";
import type { LinkPrice, LinkState } from "../domain/payment-link.js";
import { html, raw, type SafeHtml } from "./html.js";
import { DECIMAL_SEPARATOR, type Language, t } from "./messages.js";
import { STYLES } from "./styles.js";

/**
 * The payer's page of a payment link (`/l/{id}`, issue #41, docs/decisions/payment-links.md):
 * server-rendered HTML without JavaScript: title, description, the amount (or a field for it within
 * the link's bounds), a network picker and one button, posted as a form to the same URL. Every
 * value is escaped by the `html` template; the Content-Security-Policy allows no script and form
 * posts to this origin only (`linkPageSecurityPolicy`). Its texts are the `link…` keys of the
 * hosted page's message files (`messages/*.json`), in the same languages.
 */

/** No script at all; styles by nonce; the form posts to this origin only. */
export function linkPageSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    "img-src data:",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The link as the page shows it (no merchant data beyond what the payer needs). */
export interface LinkPageInput {
  /** The page language, chosen as for the hosted page (`chooseLanguage`). */
  lang: Language;
  nonce: string;
  title: string;
  description: string | null;
  price: LinkPrice;
  networks: CurrencyType[];
  state: LinkState;
  /** What the payer sent last (re-shown after a refused entry). */
  chosen?: { currencyType?: string | undefined; amount?: string | undefined };
  errors?: FieldError[];
  /** An answer to a form post: `unavailable` (chain or rate), `full` (all slots taken). */
  notice?: "unavailable" | "full";
}

function tokensOf(networks: readonly CurrencyType[]): string {
  return [...new Set(networks.map((c) => currencyOf(c).token))].join(" / ");
}

function amountText(units: bigint, lang: Language): string {
  return formatUnits(units).replace(".", DECIMAL_SEPARATOR[lang]);
}

function priceBlock(p: LinkPageInput, lang: Language): SafeHtml {
  const tokens = tokensOf(p.networks);
  const price = p.price;
  if (price.kind === "fixed")
    return html`<dl class="facts"><div><dt>${t(lang, "linkAmount")}</dt><dd><strong class="amount">${amountText(price.amount, lang)} ${tokens}</strong></dd></div></dl>`;
  if (price.kind === "fiat")
    return html`<dl class="facts"><div><dt>${t(lang, "linkAmount")}</dt><dd><strong class="amount">${t(
      lang,
      "linkFiat",
      {
        price: `${amountText(price.priceAmount, lang)} ${price.priceCurrency}`,
        tokens,
      },
    )}</strong></dd></div></dl>`;
  const min = price.minAmount === null ? null : `${amountText(price.minAmount, lang)} ${tokens}`;
  const max = price.maxAmount === null ? null : `${amountText(price.maxAmount, lang)} ${tokens}`;
  const hint =
    min && max
      ? t(lang, "linkBetween", { min, max })
      : min
        ? t(lang, "linkAtLeast", { min })
        : max
          ? t(lang, "linkAtMost", { max })
          : "";
  return html`<p class="label"><label for="amount">${t(lang, "linkAmountField")} (${tokens})</label></p>
<p class="address-row"><input id="amount" name="amount" inputmode="decimal" autocomplete="off" required maxlength="32" value="${p.chosen?.amount ?? ""}"${hint ? raw(' aria-describedby="amount-hint"') : ""}></p>
${hint ? html`<p id="amount-hint" class="note">${hint}</p>` : ""}`;
}

function networkPicker(p: LinkPageInput, lang: Language): SafeHtml {
  if (p.networks.length === 0) return html`<p class="warning">${t(lang, "linkNoNetwork")}</p>`;
  const chosen = p.networks.includes(p.chosen?.currencyType as CurrencyType)
    ? p.chosen?.currencyType
    : p.networks[0];
  return html`<fieldset class="networks"><legend>${t(lang, "linkNetwork")}</legend>${p.networks.map(
    (c) =>
      html`<p><label><input type="radio" name="currencyType" value="${c}"${c === chosen ? raw(" checked") : ""}> ${currencyOf(c).token} · ${currencyOf(c).definition.label}</label></p>`,
  )}</fieldset>`;
}

function closedText(state: LinkState, lang: Language): string {
  if (state === "expired") return t(lang, "linkClosedExpired");
  if (state === "sold_out") return t(lang, "linkClosedSoldOut");
  return t(lang, "linkClosedInactive");
}

/** Whether the link's page shows it as closed (410): deactivated, expired or all payments received. */
export function isClosed(state: LinkState): boolean {
  return state === "inactive" || state === "expired" || state === "sold_out";
}

/** The page of a link: its form, or the closed notice; with the errors of a refused entry. */
export function renderLinkPage(p: LinkPageInput): string {
  const { lang } = p;
  if (isClosed(p.state)) {
    return document(
      lang,
      p.nonce,
      p.title,
      html`<h1>${p.title}</h1><section class="panel panel-expired" role="status"><p><strong>${t(lang, "linkClosedTitle")}</strong></p><p>${closedText(p.state, lang)}</p></section>`,
    );
  }
  const notice =
    p.notice === "full"
      ? html`<section class="panel panel-partial" role="alert"><p><strong>${t(lang, "linkFullTitle")}</strong></p><p>${t(lang, "linkFullText")}</p></section>`
      : p.notice === "unavailable"
        ? html`<section class="panel panel-partial" role="alert"><p><strong>${t(lang, "linkUnavailableTitle")}</strong></p><p>${t(lang, "linkUnavailableText")}</p></section>`
        : p.errors && p.errors.length > 0
          ? html`<section class="panel panel-expired" role="alert"><p><strong>${t(lang, "linkInvalidTitle")}</strong></p>${p.errors.map(
              (e) => html`<p>${e.field}: ${e.message}</p>`,
            )}</section>`
          : "";
  const body = html`<h1>${p.title}</h1>
${p.description ? html`<p class="order">${p.description}</p>` : ""}
${notice}
<form method="post">
${priceBlock(p, lang)}
${networkPicker(p, lang)}
<p><button type="submit" class="copy"${p.networks.length === 0 ? raw(" disabled") : ""}>${t(lang, "linkSubmit")}</button></p>
</form>`;
  return document(lang, p.nonce, p.title, body);
}

/** The page of an unknown link id (404), or of a form post from another site (403). */
export function renderLinkMessagePage(lang: Language, nonce: string, kind: "notFound" | "forbidden"): string {
  const title = t(lang, kind === "notFound" ? "linkNotFoundTitle" : "linkForbiddenTitle");
  return document(
    lang,
    nonce,
    title,
    html`<h1>${title}</h1><p>${t(lang, kind === "notFound" ? "linkNotFoundText" : "linkForbiddenText")}</p>`,
  );
}

function document(lang: Language, nonce: string, title: string, body: SafeHtml): string {
  return `<!doctype html>${html`<html lang="${lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style nonce="${nonce}">${raw(STYLES)}
.networks{border:1px solid #d5dae0;border-radius:8px;margin:0 0 1rem;padding:.5rem 1rem}
.networks p{margin:.35rem 0}
#amount{flex:1 1 12rem;font:inherit;padding:.5rem;border:1px solid #d5dae0;border-radius:6px}</style>
</head><body><main class="card">
${body}
<footer>${t(lang, "linkPoweredBy")}</footer>
</main></body></html>`}`;
}
