/** The deposit engine's public API: sessions and wallets, the watcher's handler, the expiry job. */
export {
  CheckoutSessionInserts,
  type CreateDepositDeps,
  createCheckoutSession,
  type DepositWallet,
  generateDepositWallet,
  type NewCheckoutSession,
} from "./create.js";
export { type ExpiryDeps, expireDueSessions, expireOneSession, sessionExpiryJob } from "./expiry.js";
export { createDepositHandler, type DepositHandlerDeps } from "./handler.js";
export {
  applyReturnOutcome,
  claimDueDecision,
  type DueDecision,
  decideHeldDeposit,
  deferDecision,
  type HeldAction,
  lockHeldDeposit,
  markReturned,
  releaseDeposit,
  returnBacking,
  returnDestination,
} from "./held-decisions.js";
export {
  type CheckoutDeps,
  type CheckoutSessionView,
  checkoutDeps,
  getCheckoutSession,
  type OpenCheckoutSessionInput,
  openCheckoutSession,
  openCheckoutSessionIn,
  openDepositWallet,
} from "./open-session.js";
export {
  paySandboxAddress,
  paySandboxSession,
  type SandboxPayDeps,
  type SandboxPayment,
} from "./sandbox-pay.js";
export { depositSenderCheck } from "./sender-check.js";
export {
  findCheckoutSession,
  findCheckoutSessionsByIds,
  findPublicCheckoutSession,
  findSessionDetections,
} from "./sessions-store.js";
export type { SettleDeps } from "./settle.js";
