/**
 * The `transactions` table (deposits, withdrawals and payouts alike): its rows, its lists and the
 * reads built on it. Other features and the routes reach it through this file only.
 */
export { EXPORT_COLUMNS, exportTransactionsCsv } from "./export.js";
export { chainObservationOf, heldDepositsAt } from "./held-deposits.js";
export { linkPayments } from "./link-payments.js";
export {
  likeLiteral,
  listTransactions,
  listTransactionsAcrossMerchants,
  type TransactionFilter,
  transactionListQueries,
} from "./list.js";
export { findPaymentBacking } from "./payment-backing.js";
export { dailyVolume, findAnyTransaction, getAnyTransaction, type VolumeDay } from "./reads.js";
export {
  findTransaction,
  getTransaction,
  insertTransaction,
  lockTransaction,
  type NewTransaction,
  TRANSACTION_RECORD_COLUMNS,
  toRecord,
  transactionValues,
  updateTransaction,
} from "./records.js";
export { insertTransactionRows, joinTransactionOf } from "./session-rows.js";
export { closedDeposits } from "./verify-reads.js";
