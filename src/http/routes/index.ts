import type { App, RouteDeps } from "../app-types.js";
import { accountRoutes } from "./account.js";
import { adminRoutes } from "./admin.js";
import { authRoutes } from "./auth.js";
import { balanceRoutes } from "./balance.js";
import { dashboardApiKeyRoutes } from "./dashboard-api-keys.js";
import { dashboardMailRoutes } from "./dashboard-mail.js";
import { dashboardSettingsRoutes } from "./dashboard-settings.js";
import { disabledRoutes } from "./disabled.js";
import { docsRoutes } from "./docs.js";
import { healthRoutes } from "./health.js";
import { transactionRoutes } from "./transactions.js";
import { webhookRoutes } from "./webhooks.js";

/** Every route module of the API, registered in this order. Add new endpoint groups here. */
export const routeModules: ((app: App, deps: RouteDeps) => void)[] = [
  healthRoutes,
  docsRoutes,
  disabledRoutes,
  accountRoutes,
  authRoutes,
  dashboardApiKeyRoutes,
  dashboardSettingsRoutes,
  dashboardMailRoutes,
  adminRoutes,
  balanceRoutes,
  transactionRoutes,
  webhookRoutes,
];
