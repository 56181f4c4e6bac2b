/** Withdrawal requests and payouts: creation, approval, rejection, and the outcome of their transfer. */
export { registerWithdrawalOutcomes } from "./outcomes.js";
export {
  applyTransferOutcome,
  approveWithdrawal,
  createPayout,
  createWithdrawal,
  type NewWithdrawal,
  type RequestTransfer,
  rejectWithdrawal,
  type TransferIntent,
  type TransferOutcome,
  validateWithdrawal,
  type WithdrawalDeps,
} from "./service.js";
