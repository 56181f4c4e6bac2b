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
  findCheckoutSession,
  findCheckoutSessionsByIds,
  findPublicCheckoutSession,
  findSessionDetections,
} from "./sessions-store.js";
export type { SettleDeps } from "./settle.js";
