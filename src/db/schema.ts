import type { FoundationTables } from "./tables/foundation.js";
import type { LedgerTables } from "./tables/ledger.js";

/**
 * Kysely's view of the database: the typed mirror of `migrations/*.sql`. Each concern declares its
 * tables in `tables/<concern>.ts`; this interface joins them.
 */
export interface DB extends FoundationTables, LedgerTables {}

export type {
  ApiKeyRow,
  Merchant,
  MerchantSettingsRow,
  MerchantSettingsUpdate,
  NewMerchant,
} from "./tables/foundation.js";
