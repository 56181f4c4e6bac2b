import pg from "pg";

/**
 * BEGIN sent with a transaction's first statement, in one write and one round trip (issue 23).
 *
 * Kysely opens a transaction with `BEGIN`, waits for its answer, then sends the first statement:
 * two round trips before any work, three with COMMIT. For a posting (one statement) the BEGIN was
 * one of three round trips; sending it with the statement gave 11 % more postings/s over 1,000
 * merchants (bench:ledger, decision 21 of docs/decisions/hot-paths.md). node-postgres has no way to send
 * two statements under one Sync (its `pipeline` option gives each query its own Sync), so this is
 * written here, on its documented extension point (a query object with `submit(connection)`, as
 * pg-cursor does).
 *
 * On the wire: `Bind(sg_begin) Execute` then the statement's own `[Parse] Bind Describe Execute
 * Sync`. ONE Sync for both is what keeps the transaction whole: if BEGIN fails, the server skips
 * everything up to the Sync, so the statement never runs on its own (autocommitted) — the caller
 * gets BEGIN's error in its place. BEGIN is a named statement, parsed once per connection by
 * {@link prepareBegin} (a Parse here would answer ParseComplete, which node-postgres credits to
 * the statement's own name); its CommandComplete is the first one this query receives and is not
 * part of the result.
 */
export const BEGIN_STATEMENT = "sg_begin";

/** What pg's `Connection` offers a query object (pg-protocol's writer; not in @types/pg). */
interface WireConnection {
  parsedStatements: Record<string, string | undefined>;
  submittedNamedStatements: Record<string, string | undefined>;
  stream: { cork?: () => void; uncork?: () => void };
  bind(config: { statement: string; portal: string; values: unknown[] }): void;
  execute(config: { portal: string }): void;
}

/** pg's Query internals this class overrides (not in @types/pg). */
interface QueryInternals {
  text?: string;
  name?: string;
  values?: unknown[];
  rows?: number;
  submit(connection: WireConnection): Error | null;
  handleCommandComplete(msg: { text: string }, connection: WireConnection): void;
  handleError(err: Error, connection: WireConnection): void;
  _canceledDueToError: Error | false;
}

// pg's Query constructor, typed with the internals above.
const Query = pg.Query as unknown as new (
  config: { text: string; name?: string; values?: unknown[] },
  values?: unknown[],
  callback?: (err: Error | null, result: pg.QueryResult) => void,
) => QueryInternals;

/** Is BEGIN already a prepared statement of this connection? Then it can go with the next statement. */
export function beginPrepared(connection: unknown): boolean {
  return (connection as WireConnection).parsedStatements[BEGIN_STATEMENT] !== undefined;
}

/** The query that prepares (and runs) BEGIN the first time on a connection: one ordinary round trip. */
export function prepareBegin(): { name: string; text: string; values: unknown[] } {
  return { name: BEGIN_STATEMENT, text: "begin", values: [] };
}

/** A parameterised statement sent with the BEGIN before it (see the file's comment). */
export class PipelinedBeginQuery extends Query {
  #beginAnswered = false;

  constructor(config: { text: string; name?: string; values: unknown[] }) {
    super(config);
    // Always Parse/Bind/Execute, never pg's simple Query message, which has no place under the Sync.
    (this as unknown as { queryMode: string }).queryMode = "extended";
  }

  override submit(connection: WireConnection): Error | null {
    // pg's own checks, made before anything is written: a query refused after BEGIN's messages
    // were written would leave them on the wire without their Sync, to be run by the next query.
    if (typeof this.text !== "string") return new Error("a pipelined BEGIN needs the statement's text");
    const previous = this.name
      ? (connection.parsedStatements[this.name] ?? connection.submittedNamedStatements[this.name])
      : undefined;
    if (previous !== undefined && previous !== this.text) {
      return new Error(
        `Prepared statements must be unique - '${this.name}' was used for a different statement`,
      );
    }
    if (!Array.isArray(this.values) || this.rows)
      return new Error("a pipelined BEGIN needs an array of values");
    connection.stream.cork?.();
    try {
      connection.bind({ statement: BEGIN_STATEMENT, portal: "", values: [] });
      connection.execute({ portal: "" });
      // Parse (when not yet parsed), Bind, Describe, Execute and the one Sync.
      return super.submit(connection);
    } finally {
      connection.stream.uncork?.();
    }
  }

  override handleCommandComplete(msg: { text: string }, connection: WireConnection): void {
    if (this.#beginAnswered) {
      super.handleCommandComplete(msg, connection);
      return;
    }
    this.#beginAnswered = true;
    if (msg.text !== "BEGIN") {
      // Never expected: the answers are out of step with what was sent. Fail the query (at its
      // ReadyForQuery) rather than hand back a wrong result; the caller rolls back.
      this._canceledDueToError = new Error(`pipelined BEGIN answered ${msg.text}`);
    }
  }

  override handleError(err: Error, connection: WireConnection): void {
    // BEGIN itself failed (say its prepared statement was deallocated): prepare it again next time.
    if (!this.#beginAnswered) delete connection.parsedStatements[BEGIN_STATEMENT];
    super.handleError(err, connection);
  }
}
