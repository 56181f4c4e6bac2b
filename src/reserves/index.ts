/** Reserve reconciliation (issue #22): on-chain holdings against what the ledger owes. */
export { custodialChains } from "./custody.js";
export { type ReserveJobDeps, reserveJobs } from "./jobs.js";
export {
  MAX_ADDRESSES_READ,
  type ReserveReport,
  type ReserveTarget,
  reconcileReserves,
} from "./reconcile.js";
export {
  formatReserveTable,
  readReserveReports,
  recordReserveCheck,
  registerReserveMetrics,
  reserveReadinessChecks,
  summaryLine,
} from "./status.js";
