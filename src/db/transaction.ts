import type { Db } from "./database.js";

/**
 * Runs `fn` in a transaction: the caller's when `db` already is one (the work joins it and commits
 * or rolls back with it), else a new one. Use cases open their transactions this way, so a caller
 * can make one unit of several steps (an action and its audit record: `audit/trail.ts`).
 */
export function inTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}
