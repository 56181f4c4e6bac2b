import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { FieldError } from "../domain/errors.js";
import { formatUnits } from "../domain/money.js";
import type { LinkPrice, LinkState } from "../domain/payment-link.js";
import { html, raw, type SafeHtml } from "./html.js";
import type { Language } from "./messages.js";
import { STYLES } from "./styles.js";

/**
 * The payer's page of a payment link (`/l/{id}`, issue #41, docs/decisions/payment-links.md):
 * server-rendered HTML without JavaScript: title, description, the amount (or a field for it within
 * the link's bounds), a network picker and one button, posted as a form to the same URL. Every
 * value is escaped by the `html` template; the Content-Security-Policy allows no script and form
 * posts to this origin only (`linkPageSecurityPolicy`). English and German (other page languages
 * fall back to English).
 */

const TEXT = {
  en: {
    amount: "Amount",
    amountField: "Amount to pay",
    between: "Between {min} and {max}",
    atLeast: "At least {min}",
    atMost: "At most {max}",
    fiat: "{price}, paid in {tokens} at the current rate",
    network: "Pay with",
    submit: "Continue to payment",
    closedTitle: "This payment link is closed",
    closedInactive: "The merchant no longer accepts payments through this link.",
    closedExpired: "This link has expired.",
    closedSoldOut: "This link has received all the payments it accepts.",
    fullTitle: "Please try again later",
    fullText:
      "Every payment this link accepts is taken by a payment in progress. Try again in a few minutes.",
    invalidTitle: "Please check your entry",
    unavailableTitle: "Payments are unavailable right now",
    unavailableText:
      "The network you chose cannot take payments at the moment. Try again shortly or pick another.",
    forbiddenTitle: "This form must be sent from its own page",
    forbiddenText: "Open the payment link again and submit the form there.",
    notFoundTitle: "Payment link not found",
    notFoundText: "Check the link you were given.",
    noNetwork: "No network is available for this link at the moment.",
    poweredBy: "Payments by stablegate",
  },
  de: {
    amount: "Betrag",
    amountField: "Zu zahlender Betrag",
    between: "Zwischen {min} und {max}",
    atLeast: "Mindestens {min}",
    atMost: "Höchstens {max}",
    fiat: "{price}, bezahlt in {tokens} zum aktuellen Kurs",
    network: "Bezahlen mit",
    submit: "Weiter zur Zahlung",
    closedTitle: "Dieser Zahlungslink ist geschlossen",
    closedInactive: "Der Händler nimmt über diesen Link keine Zahlungen mehr an.",
    closedExpired: "Dieser Link ist abgelaufen.",
    closedSoldOut: "Dieser Link hat alle Zahlungen erhalten, die er annimmt.",
    fullTitle: "Bitte später erneut versuchen",
    fullText:
      "Alle Zahlungen, die dieser Link annimmt, sind durch laufende Zahlungen belegt. Versuchen Sie es in einigen Minuten erneut.",
    invalidTitle: "Bitte prüfen Sie Ihre Eingabe",
    unavailableTitle: "Zahlungen sind gerade nicht möglich",
    unavailableText:
      "Das gewählte Netzwerk nimmt gerade keine Zahlungen an. Versuchen Sie es gleich erneut oder wählen Sie ein anderes.",
    forbiddenTitle: "Dieses Formular muss von seiner eigenen Seite gesendet werden",
    forbiddenText: "Öffnen Sie den Zahlungslink erneut und senden Sie das Formular dort ab.",
    notFoundTitle: "Zahlungslink nicht gefunden",
    notFoundText: "Prüfen Sie den Link, den Sie erhalten haben.",
    noNetwork: "Für diesen Link ist gerade kein Netzwerk verfügbar.",
    poweredBy: "Zahlungen über stablegate",
  },
} as const;
type Key = keyof (typeof TEXT)["en"];
type PageLanguage = keyof typeof TEXT;

/** The language the link page is shown in: the hosted page's choice when it has the texts, else English. */
export function linkPageLanguage(lang: Language): PageLanguage {
  return lang in TEXT ? (lang as PageLanguage) : "en";
}

function tx(lang: PageLanguage, key: Key, vars: Record<string, string> = {}): string {
  return Object.entries(vars).reduce((s, [k, v]) => s.replaceAll(`{${k}}`, v), TEXT[lang][key] as string);
}

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

function amountText(units: bigint, lang: PageLanguage): string {
  return lang === "de" ? formatUnits(units).replace(".", ",") : formatUnits(units);
}

function priceBlock(p: LinkPageInput, lang: PageLanguage): SafeHtml {
  const tokens = tokensOf(p.networks);
  const price = p.price;
  if (price.kind === "fixed")
    return html`<dl class="facts"><div><dt>${tx(lang, "amount")}</dt><dd><strong class="amount">${amountText(price.amount, lang)} ${tokens}</strong></dd></div></dl>`;
  if (price.kind === "fiat")
    return html`<dl class="facts"><div><dt>${tx(lang, "amount")}</dt><dd><strong class="amount">${tx(
      lang,
      "fiat",
      {
        price: `${amountText(price.priceAmount, lang)} ${price.priceCurrency}`,
        tokens,
      },
    )}</strong></dd></div></dl>`;
  const min = price.minAmount === null ? null : `${amountText(price.minAmount, lang)} ${tokens}`;
  const max = price.maxAmount === null ? null : `${amountText(price.maxAmount, lang)} ${tokens}`;
  const hint =
    min && max
      ? tx(lang, "between", { min, max })
      : min
        ? tx(lang, "atLeast", { min })
        : max
          ? tx(lang, "atMost", { max })
          : "";
  return html`<p class="label"><label for="amount">${tx(lang, "amountField")} (${tokens})</label></p>
<p class="address-row"><input id="amount" name="amount" inputmode="decimal" autocomplete="off" required maxlength="32" value="${p.chosen?.amount ?? ""}"${hint ? raw(' aria-describedby="amount-hint"') : ""}></p>
${hint ? html`<p id="amount-hint" class="note">${hint}</p>` : ""}`;
}

function networkPicker(p: LinkPageInput, lang: PageLanguage): SafeHtml {
  if (p.networks.length === 0) return html`<p class="warning">${tx(lang, "noNetwork")}</p>`;
  const chosen = p.networks.includes(p.chosen?.currencyType as CurrencyType)
    ? p.chosen?.currencyType
    : p.networks[0];
  return html`<fieldset class="networks"><legend>${tx(lang, "network")}</legend>${p.networks.map(
    (c) =>
      html`<p><label><input type="radio" name="currencyType" value="${c}"${c === chosen ? raw(" checked") : ""}> ${currencyOf(c).token} · ${currencyOf(c).definition.label}</label></p>`,
  )}</fieldset>`;
}

function closedText(state: LinkState, lang: PageLanguage): string {
  if (state === "expired") return tx(lang, "closedExpired");
  if (state === "sold_out") return tx(lang, "closedSoldOut");
  return tx(lang, "closedInactive");
}

/** Whether the link's page shows it as closed (410): deactivated, expired or all payments received. */
export function isClosed(state: LinkState): boolean {
  return state === "inactive" || state === "expired" || state === "sold_out";
}

/** The page of a link: its form, or the closed notice; with the errors of a refused entry. */
export function renderLinkPage(p: LinkPageInput): string {
  const lang = linkPageLanguage(p.lang);
  if (isClosed(p.state)) {
    return document(
      lang,
      p.nonce,
      p.title,
      html`<h1>${p.title}</h1><section class="panel panel-expired" role="status"><p><strong>${tx(lang, "closedTitle")}</strong></p><p>${closedText(p.state, lang)}</p></section>`,
    );
  }
  const notice =
    p.notice === "full"
      ? html`<section class="panel panel-partial" role="alert"><p><strong>${tx(lang, "fullTitle")}</strong></p><p>${tx(lang, "fullText")}</p></section>`
      : p.notice === "unavailable"
        ? html`<section class="panel panel-partial" role="alert"><p><strong>${tx(lang, "unavailableTitle")}</strong></p><p>${tx(lang, "unavailableText")}</p></section>`
        : p.errors && p.errors.length > 0
          ? html`<section class="panel panel-expired" role="alert"><p><strong>${tx(lang, "invalidTitle")}</strong></p>${p.errors.map(
              (e) => html`<p>${e.field}: ${e.message}</p>`,
            )}</section>`
          : "";
  const body = html`<h1>${p.title}</h1>
${p.description ? html`<p class="order">${p.description}</p>` : ""}
${notice}
<form method="post">
${priceBlock(p, lang)}
${networkPicker(p, lang)}
<p><button type="submit" class="copy"${p.networks.length === 0 ? raw(" disabled") : ""}>${tx(lang, "submit")}</button></p>
</form>`;
  return document(lang, p.nonce, p.title, body);
}

/** The page of an unknown link id (404), or of a form post from another site (403). */
export function renderLinkMessagePage(lang: Language, nonce: string, kind: "notFound" | "forbidden"): string {
  const l = linkPageLanguage(lang);
  const title = tx(l, kind === "notFound" ? "notFoundTitle" : "forbiddenTitle");
  return document(
    l,
    nonce,
    title,
    html`<h1>${title}</h1><p>${tx(l, kind === "notFound" ? "notFoundText" : "forbiddenText")}</p>`,
  );
}

function document(lang: PageLanguage, nonce: string, title: string, body: SafeHtml): string {
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
<footer>${tx(lang, "poweredBy")}</footer>
</main></body></html>`}`;
}
