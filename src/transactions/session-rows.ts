import type { Expression, Insertable, QueryCreator, Selectable, SelectQueryBuilder } from "kysely";
import type { DB } from "../db/schema.js";
import type { TransactionsTable } from "../db/tables/ledger.js";
import { TRANSACTION_RECORD_COLUMNS } from "./records.js";

/**
 * The `transactions` side of checkout sessions (issue #36: deposits/ owns `checkout_sessions`,
 * this folder the deposit transaction of each session), as fragments the caller composes into its
 * own statement: the insert of the session's deposit transactions and the join of a session to its
 * transaction.
 */

/**
 * Inserts deposit transaction rows, returning their `TransactionRecord` columns: the main statement
 * of the caller's data-modifying CTEs (`insertTransactionRows(db.with(…).with(…), rows)`), which
 * the caller may mark `PREPARED` and run (one statement, one round trip).
 */
export function insertTransactionRows<QDB extends DB>(
  creator: QueryCreator<QDB>,
  rows: Insertable<TransactionsTable> | readonly Insertable<TransactionsTable>[],
) {
  // The caller's CTEs are its own: typed on the schema alone.
  return (creator as unknown as QueryCreator<DB>)
    .insertInto("transactions")
    .values(rows)
    .returning(TRANSACTION_RECORD_COLUMNS);
}

/**
 * Joins each row of the caller's query to its transaction (`inner join "transactions" as "t" on
 * "t"."id" = <id>`) and selects all of the transaction's columns (`"t".*`): `id` is the caller's
 * column holding the transaction id (e.g. the session's `s.id`).
 */
export function joinTransactionOf<QDB, TB extends keyof QDB, O>(
  query: SelectQueryBuilder<QDB, TB, O>,
  id: Expression<string>,
): SelectQueryBuilder<QDB & { t: TransactionsTable }, TB | "t", O & Selectable<TransactionsTable>> {
  // Typed on the schema alone (the caller's tables and aliases are its own); the caller's types
  // are given back with `t` added.
  const joined = (query as unknown as SelectQueryBuilder<DB, never, O>)
    .innerJoin("transactions as t", (j) => j.on("t.id", "=", id))
    .selectAll("t");
  return joined as unknown as SelectQueryBuilder<
    QDB & { t: TransactionsTable },
    TB | "t",
    O & Selectable<TransactionsTable>
  >;
}
