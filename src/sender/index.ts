/**
 * The sender's public face: queue an outgoing transfer (`requestTransfer`, inside the caller's
 * transaction), learn its final state (`TransferOutcomes`, the registration point), the sending
 * jobs, and the status read by metrics and `/readyz`.
 */

export {
  assembleCarrier,
  type CarriedSweep,
  carriedSweeps,
  failUncarriedSweeps,
  requestCarriedSweep,
  sweeperDeployToWaitFor,
  uncarriedSweeps,
} from "./batches.js";
export type { EnergyGate, GateRow } from "./context.js";
export {
  type CostPurpose,
  type CostRow,
  costsSince,
  feePerServed,
  formatCostTable,
  formatNative,
  nativeUnit,
  transferCosts,
} from "./costs.js";
export {
  type FrozenRole,
  frozenAddressesOf,
  isRecordedFrozen,
  recordFreezeCheck,
} from "./frozen-addresses.js";
export { requestTransfer, TRANSFER_CHANNEL, type TransferIntent } from "./intents.js";
export { type SenderJobDeps, type SenderJobOptions, senderJobs } from "./jobs.js";
export {
  type TransferKind,
  type TransferOutcome,
  type TransferOutcomeHandler,
  TransferOutcomes,
} from "./outcomes.js";
export {
  claimRental,
  markRentalOrdered,
  OPEN_RENTAL_STATES,
  openRentalTo,
  type Rental,
  type RentalRequest,
  rentalFailedSince,
  rentalServing,
  rentalsToOrder,
  requestRental,
  settleRental,
  staleRentalClaims,
} from "./rentals.js";
export {
  type DueReclaim,
  delegationsInFlight,
  dueReclaims,
  hasOpenStake,
  openDelegationTo,
  reclaimIntentId,
  requestDelegationUnlessOpen,
} from "./resource-reads.js";
export { type FaultPoint, Sender, type SenderOptions } from "./sender.js";
export {
  nativeHoldings,
  recordResourceAccount,
  recordSendingWallets,
  registerSendingMetrics,
  sendingReadinessChecks,
} from "./status.js";
export {
  confirmedSweptFrom,
  findTransferSource,
  hasOpenSweep,
  hasRecentColdForward,
  openOutflow,
  openSweepsFrom,
  sendingWalletAddresses,
  tokenTransfersInFlight,
} from "./transfer-reads.js";
