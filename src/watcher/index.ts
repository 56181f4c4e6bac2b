/** The chain watcher's public API: its jobs, its hand-off registration point, its readiness checks. */
export {
  handedOffAfter,
  handedOffDust,
  handedOffReceipts,
  pendingObservationsAt,
  type WatchedScope,
  watchedAddressesOf,
} from "./address-holdings.js";
export {
  insertWatchedAddressRows,
  isMerchantDepositAddress,
  merchantOfDepositAddress,
  wrongNetworkTwinsWatched,
} from "./deposit-addresses.js";
export { type ConfirmedTransfer, type DepositHandler, DepositHandoff, type SenderCheck } from "./handoff.js";
export { type WatcherJobDeps, watcherJobs } from "./jobs.js";
export {
  chainTimeOf,
  confirmingTransfersInTime,
  hasConfirmingTransferBefore,
  joinObservedPayments,
  type ObservedPaymentColumns,
  observationSender,
  type PaymentTarget,
} from "./observed-payments.js";
export {
  hasHandedOffDeposit,
  isIssuedDepositAddress,
  isRecordedAddressFromIndex,
  recordedAddressAt,
  recordedIndexOf,
} from "./own-addresses.js";
export { MAX_RESCAN_BLOCKS, type RescanResult, type RescanTarget, rescanRange } from "./rescan.js";
export { chainReadinessChecks, STALE_HEAD_MS } from "./status.js";
export { ChainWatcher, type ChainWatcherOptions, type ScanResult, type TickOutcome } from "./watcher.js";
