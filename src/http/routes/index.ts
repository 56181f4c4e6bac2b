import type { App, RouteDeps } from "../app-types.js";
import { accountRoutes } from "./account.js";
import { adminRoutes } from "./admin.js";
import { auditLogRoutes } from "./audit-log.js";
import { authRoutes } from "./auth.js";
import { balanceRoutes } from "./balance.js";
import { checkoutRoutes } from "./checkout.js";
import { currencyRoutes } from "./currencies.js";
import { dashboardApiKeyRoutes } from "./dashboard-api-keys.js";
import { dashboardBrandingRoutes } from "./dashboard-branding.js";
import { dashboardMailRoutes } from "./dashboard-mail.js";
import { dashboardReadRoutes } from "./dashboard-reads.js";
import { dashboardSettingsRoutes } from "./dashboard-settings.js";
import { devMailRoutes } from "./dev-mail.js";
import { disabledRoutes } from "./disabled.js";
import { docsRoutes } from "./docs.js";
import { downloadRoutes } from "./downloads.js";
import { exportRoutes } from "./exports.js";
import { guidesRoutes } from "./guides.js";
import { healthRoutes } from "./health.js";
import { heldDepositRoutes } from "./held-deposits.js";
import { linkPageRoutes } from "./link-page.js";
import { memberRoutes } from "./members.js";
import { payRoutes } from "./pay.js";
import { paymentLinkRoutes } from "./payment-links.js";
import { sandboxRoutes } from "./sandbox.js";
import { staticWebRoutes } from "./static-web.js";
import { transactionRoutes } from "./transactions.js";
import { twoFactorRoutes } from "./two-factor.js";
import { webhookStreamRoutes } from "./webhook-stream.js";
import { webhookRoutes } from "./webhooks.js";
import { withdrawalRoutes } from "./withdrawals.js";

/** Every route module of the API, registered in this order. Add new endpoint groups here. */
export const routeModules: ((app: App, deps: RouteDeps) => void)[] = [
  healthRoutes,
  docsRoutes,
  guidesRoutes,
  downloadRoutes,
  disabledRoutes,
  accountRoutes,
  authRoutes,
  twoFactorRoutes,
  dashboardApiKeyRoutes,
  dashboardSettingsRoutes,
  dashboardBrandingRoutes,
  dashboardMailRoutes,
  devMailRoutes,
  dashboardReadRoutes,
  auditLogRoutes,
  memberRoutes,
  adminRoutes,
  balanceRoutes,
  currencyRoutes,
  transactionRoutes,
  heldDepositRoutes,
  exportRoutes,
  webhookRoutes,
  webhookStreamRoutes,
  checkoutRoutes,
  sandboxRoutes,
  withdrawalRoutes,
  paymentLinkRoutes,
  payRoutes,
  linkPageRoutes,
  staticWebRoutes,
];
