/** Withdrawal requests and payouts: creation, approval, rejection, and the outcome of their transfer. */
export { registerWithdrawalOutcomes } from "./outcomes.js";
export {
  createPayout,
  getPayout,
  listPayouts,
  type NewPayout,
  type PayoutCall,
  type PayoutDesk,
} from "./payouts.js";
export {
  approveWithdrawalRequest,
  getWithdrawal,
  getWithdrawalWithApprovals,
  listWithdrawals,
  rejectWithdrawalRequest,
  requestWithdrawal,
  type WithdrawalDesk,
} from "./requests.js";
export {
  type Approval,
  applyTransferOutcome,
  approveWithdrawal,
  createWithdrawal,
  type NewWithdrawal,
  type RequestTransfer,
  rejectWithdrawal,
  sendPayout,
  validateWithdrawal,
  type WithdrawalDeps,
} from "./service.js";
