import pg from "pg";
import { beginPrepared, PipelinedBeginQuery, prepareBegin } from "./pipelined-begin.js";
import { preparedName } from "./prepared.js";

type Callback = (err: Error | null, result?: pg.QueryResult) => void;

/** The answer to a BEGIN, COMMIT or ROLLBACK that was not sent (Kysely reads `command`, `rowCount`, `rows`). */
function notSent(command: string): Promise<pg.QueryResult> {
  return Promise.resolve({ command, rowCount: null, oid: 0, rows: [], fields: [] });
}

/**
 * The pool's client class. Two things change on the way out; everything else is node-postgres's.
 *  - Named prepared statements: a parameterised query whose text ends with the `PREPARED` mark is
 *    sent with a statement name (node-postgres parses it once per connection and afterwards sends
 *    only Bind/Execute).
 *  - BEGIN goes with the next statement (`pipelined-begin.ts`): Kysely's `begin` is held back and
 *    sent in the same write, under the same Sync, as the transaction's first parameterised
 *    statement; a COMMIT or ROLLBACK with nothing sent in between sends nothing. A first statement
 *    without parameters (a migration's script, `select 1`) or a query object (a cursor) gets the
 *    BEGIN before it, answered first, as before.
 */
export class PgClient extends pg.Client {
  /** Kysely's BEGIN, not yet sent. */
  #beginHeld = false;

  /**
   * The pool calls this when the client comes back (`database.ts`): a BEGIN never sent opened
   * nothing, and must not open a transaction around the next borrower's statements.
   */
  forgetHeldBegin(): void {
    this.#beginHeld = false;
  }

  // biome-ignore lint/suspicious/noExplicitAny: pg's query() has a dozen overloads; this forwards them all.
  override query(config: any, values?: any, callback?: any): any {
    const text = typeof config === "string" ? config : undefined;
    const plain = text !== undefined && Array.isArray(values) && callback === undefined;
    const name = plain ? preparedName(text) : undefined;
    if (plain && values.length === 0 && text === "begin" && !this.#beginHeld) {
      // pg's Connection (its `parsedStatements`) is not in @types/pg.
      const connection = (this as unknown as { connection: unknown }).connection;
      if (!beginPrepared(connection)) return super.query(prepareBegin());
      this.#beginHeld = true;
      return notSent("BEGIN");
    }
    if (this.#beginHeld) {
      this.#beginHeld = false;
      if (plain && values.length === 0 && (text === "commit" || text === "rollback")) {
        return notSent(text.toUpperCase());
      }
      if (plain && (values.length > 0 || name)) {
        return new Promise((resolve, reject) => {
          const query = new PipelinedBeginQuery({ text, name, values });
          (query as unknown as { callback: Callback }).callback = (err, result) =>
            err ? reject(err) : resolve(result);
          super.query(query as unknown as pg.Submittable);
        });
      }
      if (plain || (config && typeof config.submit !== "function" && callback === undefined)) {
        // BEGIN first, answered, then the statement: it never runs outside the transaction.
        return super.query("begin").then(() => this.query(config, values));
      }
      // A query object (a cursor) or a callback: it has to be handed to pg now. BEGIN is queued
      // before it on this connection; a BEGIN that fails on a live connection (only in an aborted
      // transaction) fails whatever follows it there too.
      super.query("begin").catch(() => {});
      return super.query(config, values, callback);
    }
    if (name) return super.query({ name, text: text as string, values }, callback);
    return super.query(config, values, callback);
  }
}
