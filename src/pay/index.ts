/** The hosted payment page's public API. */
export { escapeHtml, html, raw } from "./html.js";
export {
  isClosed,
  type LinkPageInput,
  linkPageSecurityPolicy,
  renderLinkMessagePage,
  renderLinkPage,
} from "./link-page.js";
export { isFinal, type LiveSnapshot, LiveStatusHub, type LiveSubscriber, snapshotOf } from "./live-status.js";
export { chooseLanguage, LANGUAGES, messages, t } from "./messages.js";
export {
  contentSecurityPolicy,
  pageState,
  remainingAmount,
  renderNotFoundPage,
  renderPayPage,
} from "./page.js";
export { PayPages, type PayPagesDeps } from "./pages.js";
export { paymentUri, uriCarriesAmount } from "./payment-uri.js";
export { qrSvg } from "./qr.js";
