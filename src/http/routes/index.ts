import type { App, RouteDeps } from "../app-types.js";
import { accountRoutes } from "./account.js";
import { balanceRoutes } from "./balance.js";
import { disabledRoutes } from "./disabled.js";
import { docsRoutes } from "./docs.js";
import { healthRoutes } from "./health.js";
import { transactionRoutes } from "./transactions.js";

/** Every route module of the API, registered in this order. Add new endpoint groups here. */
export const routeModules: ((app: App, deps: RouteDeps) => void)[] = [
  healthRoutes,
  docsRoutes,
  disabledRoutes,
  accountRoutes,
  balanceRoutes,
  transactionRoutes,
];
