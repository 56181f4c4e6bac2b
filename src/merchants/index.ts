/**
 * Merchants: the merchant rows, their settings per environment, and their API key pairs (the
 * lookup of the API-key channel and the dashboard's key management). Other folders reach this
 * feature through this file only.
 */

export type { ApiKeyRow, Merchant } from "../db/schema.js";
export {
  type AdminMerchantView,
  findMerchantForAdmin,
  getMerchantForAdmin,
  listMerchantsForAdmin,
} from "./admin-list.js";
export {
  type ApiKeyLookup,
  ApiKeyLookups,
  createApiKey,
  findOwnApiKey,
  issueKeyPair,
  type KeyHolder,
  type KeyPair,
  listApiKeys,
  lockOwnApiKey,
  revokeApiKey,
  revokeOwnApiKey,
  rotateApiKey,
  setApiKeyHolder,
} from "./api-keys.js";
export { findApprovalThresholds, merchantKeyPairs } from "./approval-reads.js";
export {
  type ApiKeyCredentials,
  type ApiKeyDemand,
  type ApiKeyFinder,
  type ApiKeyPrincipal,
  authorizeApiKey,
} from "./authorize.js";
export {
  type BrandingLogo,
  type BrandingPatch,
  findLogoByHash,
  findPageBranding,
  getBranding,
  type MerchantBranding,
  type PageBranding,
  updateBranding,
} from "./branding.js";
export { type CreatedMerchant, createMerchantWithKeys } from "./create.js";
export { findUnderpaymentToleranceBp } from "./deposit-settings.js";
export {
  DEFAULT_AUTO_APPROVE_THRESHOLD,
  getSettings,
  type MerchantSettings,
  type SettingsPatch,
  updateSettings,
} from "./settings.js";
export { merchantStatuses } from "./statuses.js";
export { findMerchantById } from "./store.js";
