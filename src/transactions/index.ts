/**
 * The `transactions` table (deposits, withdrawals and payouts alike): its rows, its lists and the
 * reads built on it. Other features and the routes reach it through this file only.
 */
export {
  findTransaction,
  insertTransaction,
  likeLiteral,
  listTransactions,
  listTransactionsAcrossMerchants,
  lockTransaction,
  type NewTransaction,
  TRANSACTION_RECORD_COLUMNS,
  type TransactionFilter,
  toRecord,
  transactionListQueries,
  transactionValues,
  updateTransaction,
} from "./records.js";
