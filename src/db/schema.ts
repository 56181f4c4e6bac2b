import type { FoundationTables } from "./tables/foundation.js";

/**
 * Kysely's view of the database: the typed mirror of `migrations/*.sql`. Each concern declares its
 * tables in `tables/<concern>.ts`; this interface joins them.
 */
export interface DB extends FoundationTables {}

export type {
  ApiKeyRow,
  Merchant,
  MerchantSettingsRow,
  MerchantSettingsUpdate,
  NewMerchant,
} from "./tables/foundation.js";
