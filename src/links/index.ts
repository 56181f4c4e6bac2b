/** Payment links (issue #41): the merchant's use cases and the payer's page. Others reach them here only. */
export {
  createPaymentLink,
  deactivateLink,
  getPaymentLink,
  listPaymentLinks,
  type PaymentLinkDeps,
  type PaymentLinkView,
} from "./manage.js";
export {
  type LinkPageView,
  type LinkPaymentChoice,
  linkPage,
  type OpenLinkResult,
  openLinkSession,
} from "./open.js";
