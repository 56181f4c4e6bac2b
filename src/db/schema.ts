import type { AuditTables } from "./tables/audit.js";
import type { BrandingTables } from "./tables/branding.js";
import type { ChainsTables } from "./tables/chains.js";
import type { DashboardTables } from "./tables/dashboard.js";
import type { DepositTables } from "./tables/deposits.js";
import type { FoundationTables } from "./tables/foundation.js";
import type { LedgerTables } from "./tables/ledger.js";
import type { LinkTables } from "./tables/links.js";
import type { SendingTables } from "./tables/sending.js";
import type { TeamTables } from "./tables/team.js";
import type { WebhookTables } from "./tables/webhooks.js";

/**
 * Kysely's view of the database: the typed mirror of `migrations/*.sql`. Each concern declares its
 * tables in `tables/<concern>.ts`; this interface joins them.
 */
export interface DB
  extends FoundationTables,
    LedgerTables,
    DashboardTables,
    ChainsTables,
    WebhookTables,
    DepositTables,
    SendingTables,
    AuditTables,
    TeamTables,
    BrandingTables,
    LinkTables {}

export type {
  ApiKeyRow,
  Merchant,
  MerchantSettingsRow,
  MerchantSettingsUpdate,
  NewMerchant,
} from "./tables/foundation.js";
