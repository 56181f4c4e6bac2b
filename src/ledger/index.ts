/** The double-entry ledger: postings of the money flows, balances, and the consistency check. */
export { owedOnChain } from "./account-sums.js";
export { type Balance, getBalances } from "./balances.js";
export { holdState } from "./hold-reads.js";
export {
  adjustFrozenCustody,
  creditDeposit,
  holdDeposit,
  holdFunds,
  releaseHeldDeposit,
  releaseHold,
  requirePosted,
  settleHold,
  settleReturnedDeposit,
} from "./operations.js";
export {
  ConcurrentPostingError,
  type CustodyContext,
  type PostHooks,
  type PostingContext,
  type PostResult,
  postLedger,
} from "./post.js";
export { formatLedgerReport, type LedgerProblem, type LedgerReport, verifyLedger } from "./verify.js";
