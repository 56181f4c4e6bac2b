import { returnUrlErrors } from "../domain/checkout.js";
import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { formatUnits } from "../domain/money.js";
import { CLIENT_SCRIPT } from "./client-script.js";
import { html, raw, type SafeHtml } from "./html.js";
import { isConfirming, isFinal, type LiveSnapshot, seenAmount } from "./live-status.js";
import {
  DECIMAL_SEPARATOR,
  LANGUAGE_NAMES,
  LANGUAGES,
  type Language,
  LOCALES,
  type MessageKey,
  messages,
  t,
} from "./messages.js";
import type { WalletLink } from "./payment-uri.js";
import { STYLES } from "./styles.js";

/** What the customer sees: open (waiting / partial), the payment confirming, or one of the end states. */
export type PageState = "waiting" | "partial" | "confirming" | "paid" | "expired" | "partialExpired";

/**
 * The state shown for a session at `now`. A payment seen on the chain that covers the amount, or any
 * payment in time still confirming once the deadline has passed, shows "confirming n of m" (it counts
 * for the session: on time is decided by its block time). Past `expiresAt` an open session with
 * nothing confirming is shown as expired even before the expiry job closes it. `client-script.ts`
 * mirrors this function.
 */
export function pageState(s: LiveSnapshot, expiresAt: Date, now: number): PageState {
  if (s.status === "confirmed") return "paid";
  const seen = seenAmount(s);
  if (isConfirming(s) && (seen >= s.amount || now >= expiresAt.getTime())) return "confirming";
  const partial = s.status === "failed" ? s.actualBalance > 0n : seen > 0n;
  if (isFinal(s) || now >= expiresAt.getTime()) return partial ? "partialExpired" : "expired";
  return partial ? "partial" : "waiting";
}

/** The amount still to send: what the chain has not shown yet (confirmed or confirming). */
export function remainingAmount(s: LiveSnapshot): bigint {
  const seen = seenAmount(s);
  return s.amount > seen ? s.amount - seen : 0n;
}

/** The network's name on the page ("Ethereum (ERC-20)"), from the registry. */
export function networkName(network: CurrencyType): string {
  return currencyOf(network).definition.label;
}

/** Exact amount text in the language's notation (12500000n → "12.5" / "12,5"). */
export function displayAmount(units: bigint, lang: Language): string {
  return formatUnits(units).replace(".", DECIMAL_SEPARATOR[lang]);
}

/** `2026-01-01 12:30:00 UTC`: unambiguous whatever the customer's language or time zone. */
export function utcText(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** How the page formats a moment (the client script re-formats it with the same options in the browser's zone). */
export const TIME_FORMAT: Readonly<Intl.DateTimeFormatOptions> = {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  timeZoneName: "short",
};

/**
 * A moment in the payer's language, in UTC with the zone named ("7 Dec 2026, 20:30 UTC",
 * "2026年12月7日 UTC 20:30"): the server does not know the payer's time zone; the page's script
 * re-renders every `<time data-local>` in the browser's own zone.
 */
export function localTimeText(d: Date, lang: Language): string {
  return new Intl.DateTimeFormat(LOCALES[lang], { ...TIME_FORMAT, timeZone: "UTC" }).format(d);
}

/** A `<time>` the client script re-renders in the browser's time zone. */
function timeElement(d: Date, lang: Language, field?: string): SafeHtml {
  return html`<time datetime="${d.toISOString()}" data-local${field ? raw(` data-field="${field}"`) : ""}>${localTimeText(d, lang)}</time>`;
}

/**
 * A return link to the shop (`successUrl`, `cancelUrl`), re-checked when the page is rendered
 * whatever was stored, by the rule the API applies when they are given (`returnUrlErrors`): an
 * absolute `https` URL (plain `http` only in the sandbox), no credentials, no spaces or control
 * characters. Anything else (`javascript:`, `data:`, relative, malformed) is not rendered.
 * Returns the normalised href, or null.
 */
export function safeReturnUrl(url: string | null | undefined, environment: Environment): string | null {
  if (typeof url !== "string" || returnUrlErrors("url", url, environment).length > 0) return null;
  return new URL(url).href;
}

export function countdownText(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return `${h > 0 ? `${h}:` : ""}${mm}:${String(s).padStart(2, "0")}`;
}

/**
 * A message whose placeholders are markup (each piece of the message text itself is escaped);
 * `{token}` is filled with `token` first (plain text from the registry).
 */
function tHtml(lang: Language, token: string, key: MessageKey, vars: Record<string, SafeHtml>): SafeHtml {
  const parts = messages(lang)
    [key].replaceAll("{token}", token)
    .split(/(\{\w+\})/);
  return html`${parts.map((p) => {
    const m = /^\{(\w+)\}$/.exec(p);
    return m?.[1] !== undefined && vars[m[1]] ? vars[m[1]] : p;
  })}`;
}

/** The shop the page belongs to: its name (display name, else company name) and logo. */
export interface PageMerchant {
  name: string;
  logo: { path: string; width: number; height: number } | null;
}

export interface PayPageInput {
  lang: Language;
  merchant: PageMerchant;
  /** Where "Back to {merchant}" goes once the payment is confirmed (checked again here). */
  successUrl?: string | null;
  /** Where "Cancel and return to {merchant}" / "Return to {merchant}" go (checked again here). */
  cancelUrl?: string | null;
  /** The "open in wallet" link under the QR code, when there is one. */
  walletLink?: WalletLink | null;
  environment: Environment;
  sessionId: string;
  network: CurrencyType;
  address: string;
  orderId: string | null;
  snapshot: LiveSnapshot;
  expiresAt: Date;
  /** Server time of the rendering (the countdown runs from `expiresAt - now`, immune to client clock skew). */
  now: number;
  /** Inline SVG of the payment QR code (absent in end states). */
  qrSvg: string | null;
  /** The remaining amount the QR code carries, when it carries one. */
  qrUnits: bigint | null;
  /** CSP nonce of the inline style and script. */
  nonce: string;
  /**
   * The other currency types the address is also watched on (wrong network): a payment of one of
   * them is credited as its own deposit, so the warning names them instead of "cannot be recovered".
   */
  alsoCredited?: readonly CurrencyType[];
}

/** The warning under the address: what may be sent, and what happens to anything else. */
function warningText(lang: Language, network: CurrencyType, others: readonly CurrencyType[]): string {
  const token = currencyOf(network).token;
  const vars = { token, network: networkName(network) };
  if (others.length === 0) return t(lang, "warning", vars);
  const list = others
    .map((c) => t(lang, "tokenOnNetwork", { token: currencyOf(c).token, network: networkName(c) }))
    .join(t(lang, "listSeparator"));
  return t(lang, "warningOtherNetworks", { ...vars, others: list });
}

/** The hosted payment page (GET /pay/{id}). Every value is escaped by `html`. */
export function renderPayPage(p: PayPageInput): string {
  const { lang, snapshot: s } = p;
  const token = currencyOf(p.network).token;
  const merchant = p.merchant.name;
  const tx = (key: MessageKey, vars: Record<string, string> = {}) =>
    t(lang, key, { token, merchant, ...vars });
  const successHref = safeReturnUrl(p.successUrl, p.environment);
  const cancelHref = safeReturnUrl(p.cancelUrl, p.environment);
  // Buttons only, never an automatic redirect; the page is `no-referrer` already.
  const returnLink = (href: string | null, key: MessageKey, kind: string) =>
    href
      ? html`<p class="return"><a class="button button-${kind}" href="${href}" rel="noopener noreferrer" data-return="${kind}">${tx(key)}</a></p>`
      : "";
  const state = pageState(s, p.expiresAt, p.now);
  const open = state === "waiting" || state === "partial";
  const remaining = remainingAmount(s);
  const amountText = displayAmount(s.amount, lang);
  const network = networkName(p.network);
  const self = `/pay/${encodeURIComponent(p.sessionId)}`;
  const field = (name: string, value: string) => html`<span data-field="${name}">${value}</span>`;
  const received = field(
    "received",
    displayAmount(state === "partial" ? seenAmount(s) : s.actualBalance, lang),
  );
  const panel = (name: PageState, body: SafeHtml) =>
    html`<div class="panel panel-${name}" data-panel="${name}"${state === name ? "" : raw(" hidden")}>${body}</div>`;

  const body = html`<main id="pay" class="card"
  data-status="${s.status}"
  data-amount="${formatUnits(s.amount)}"
  data-received="${formatUnits(s.actualBalance)}"
  data-detected="${formatUnits(s.detectedAmount)}"
  data-confirmations="${s.confirmations.current}"
  data-required="${s.confirmations.required}"
  data-remaining="${formatUnits(remaining)}"
  data-qr-amount="${p.qrUnits === null ? "" : formatUnits(p.qrUnits)}"
  data-remaining-ms="${Math.max(0, p.expiresAt.getTime() - p.now)}"
  data-decimal="${DECIMAL_SEPARATOR[lang]}"
  data-events="${self}/events"
  data-copied="${t(lang, "copied")}"
  data-locale="${LOCALES[lang]}">
<header>
  <div class="merchant">
    ${p.merchant.logo ? html`<img class="logo" src="${p.merchant.logo.path}" alt="${tx("logoAlt")}" width="${p.merchant.logo.width}" height="${p.merchant.logo.height}">` : ""}
    <p class="merchant-name">${tx("payTo")}</p>
  </div>
  <h1>${tx("title")}</h1>
  ${p.environment === "sandbox" ? html`<p class="badge">${t(lang, "sandboxBadge")}</p>` : ""}
  <p class="summary"><strong>${amountText} ${token}</strong> · ${network}</p>
  ${p.orderId ? html`<p class="order">${t(lang, "orderLabel")}: ${p.orderId}</p>` : ""}
</header>
<section class="status" role="status" aria-live="polite" aria-label="${t(lang, "statusLabel")}">
  ${panel("waiting", html`<p>${t(lang, "stateWaiting")}</p>`)}
  ${panel(
    "partial",
    html`<p>${tHtml(lang, token, "statePartial", { received, remaining: field("remaining", displayAmount(remaining, lang)) })}</p>`,
  )}
  ${panel(
    "confirming",
    html`<p>${tHtml(lang, token, "stateConfirming", {
      current: field("confirmations", String(s.confirmations.current)),
      required: field("required", String(s.confirmations.required)),
    })}</p>`,
  )}
  ${panel(
    "paid",
    html`<p>${t(lang, "statePaid")}</p>
    <dl class="facts small">
      <div><dt>${t(lang, "txLabel")}</dt><dd><code data-field="txHash">${s.blockchainTxHash ?? ""}</code></dd></div>
      <div><dt>${t(lang, "confirmedAtLabel")}</dt><dd>${s.confirmedAt ? timeElement(s.confirmedAt, lang, "confirmedAt") : html`<time data-local data-field="confirmedAt"></time>`}</dd></div>
    </dl>
    ${returnLink(successHref, "backToMerchant", "success")}`,
  )}
  ${panel("expired", html`<p>${tx("stateExpired")}</p>${returnLink(cancelHref, "returnToMerchant", "return")}`)}
  ${panel(
    "partialExpired",
    html`<p>${tHtml(lang, token, "statePartialExpired", { received, merchant: html`${merchant}` })}</p>${returnLink(cancelHref, "returnToMerchant", "return")}`,
  )}
</section>
<section id="instructions" aria-label="${t(lang, "addressLabel")}"${open ? "" : raw(" hidden")}>
  <dl class="facts">
    <div><dt>${t(lang, "amountLabel")}</dt>
      <dd><strong class="amount">${field("remaining", displayAmount(remaining, lang))} ${token}</strong>
      <button type="button" class="copy" data-copy="remaining" hidden>${t(lang, "copyAmount")}</button></dd></div>
    <div><dt>${t(lang, "networkLabel")}</dt><dd>${network}</dd></div>
  </dl>
  ${
    p.qrSvg
      ? html`<figure class="qr">
    <div class="qr-code" role="img" aria-label="${t(lang, "qrLabel")}">${raw(p.qrSvg)}</div>
    <figcaption>${t(lang, "qrHint")}</figcaption>
    <p id="qr-stale" class="note" hidden>${t(lang, "qrStale")}</p>
  </figure>`
      : ""
  }
  ${p.walletLink ? html`<p class="wallet-link"><a href="${p.walletLink.href}" rel="noopener noreferrer">${t(lang, p.walletLink.label)}</a></p>` : ""}
  <p class="label">${t(lang, "addressLabel")}</p>
  <p class="address-row"><code id="address">${p.address}</code>
  <button type="button" class="copy" data-copy="address" hidden>${t(lang, "copyAddress")}</button></p>
  <p class="warning">${warningText(lang, p.network, p.alsoCredited ?? [])}</p>
  <p class="expiry">${tHtml(lang, token, "expiresAt", {
    time: timeElement(p.expiresAt, lang),
  })} · ${t(lang, "timeLeft")} <span id="countdown" role="timer">${countdownText(p.expiresAt.getTime() - p.now)}</span></p>
  ${open ? returnLink(cancelHref, "cancelAndReturn", "cancel") : ""}
</section>
${open || state === "confirming" ? html`<noscript><p class="note">${t(lang, "noscript")} <a href="${self}?lang=${lang}">${t(lang, "refresh")}</a></p></noscript>` : ""}
${languageNav(lang, self)}
<footer>${t(lang, "poweredBy")}</footer>
</main>`;

  return document({
    lang,
    nonce: p.nonce,
    title: tx("pageTitle", { amount: amountText }),
    refreshSeconds: open || state === "confirming" ? 30 : null,
    body,
    script: open || state === "confirming",
  });
}

/** The 404 page of an unknown (or other-environment) session id. */
export function renderNotFoundPage(lang: Language, nonce: string): string {
  const body = html`<main class="card">
<h1>${t(lang, "notFoundTitle")}</h1>
<p>${t(lang, "notFoundText")}</p>
<footer>${t(lang, "poweredBy")}</footer>
</main>`;
  return document({
    lang,
    nonce,
    title: t(lang, "notFoundTitle"),
    refreshSeconds: null,
    body,
    script: false,
  });
}

function languageNav(current: Language, self: string): SafeHtml {
  return html`<nav class="langs" aria-label="${t(current, "languageLabel")}">${LANGUAGES.map(
    (l, i) =>
      html`${i > 0 ? " · " : ""}<a href="${self}?lang=${l}" lang="${l}" hreflang="${l}"${l === current ? raw(' aria-current="true"') : ""}>${LANGUAGE_NAMES[l]}</a>`,
  )}</nav>`;
}

function document(d: {
  lang: Language;
  nonce: string;
  title: string;
  refreshSeconds: number | null;
  body: SafeHtml;
  script: boolean;
}): string {
  return html`<!doctype html>
<html lang="${d.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${d.title}</title>
${d.refreshSeconds === null ? "" : html`<noscript><meta http-equiv="refresh" content="${d.refreshSeconds}"></noscript>`}
<style nonce="${d.nonce}">${raw(STYLES)}</style>
</head>
<body>
${d.body}
${d.script ? html`<script nonce="${d.nonce}">${raw(CLIENT_SCRIPT)}</script>` : ""}
</body>
</html>
`.value;
}

/** The Content-Security-Policy of the pages: nothing but our own nonce'd style/script and SSE to us. */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    // The QR code is inline SVG; the shop's logo is served by us (`/pay/logo/{sha256}`), never from elsewhere.
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}
