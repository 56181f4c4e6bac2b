import { createHash } from "node:crypto";
import { sql } from "kysely";
import pg from "pg";

const MARK = "/* prepared */";

/**
 * Appended to a query of FIXED shape (`.modifyEnd(PREPARED)`) on a hot path: on PostgreSQL it then
 * runs as a named prepared statement, parsed and planned once per connection instead of on every
 * call (for the checkout session insert, about a third of PostgreSQL's CPU per session). Only for
 * statements whose text never varies (no variable-length lists) and with explicit result columns
 * (`returning *` / `select *` would fail with "cached plan must not change result type" once a
 * migration adds a column under a running process). Harmless elsewhere: on PGlite it is a comment.
 */
export const PREPARED = sql.raw(MARK);

/** More distinct marked texts than this means a marked query varies: the rest run unprepared. */
const MAX_STATEMENTS = 200;
const names = new Map<string, string>();

function statementName(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_STATEMENTS) {
    name = `sg_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * The pool's client class: a parameterised query whose text ends with the `PREPARED` mark is sent
 * with a statement name (node-postgres then parses it once per connection and afterwards sends
 * only Bind/Execute). Everything else is passed through untouched.
 */
export class PreparingClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's query() has a dozen overloads; this forwards them all.
  override query(config: any, values?: any, callback?: any): any {
    if (typeof config === "string" && Array.isArray(values) && config.endsWith(MARK)) {
      const name = statementName(config);
      if (name) return super.query({ name, text: config, values }, callback);
    }
    return super.query(config, values, callback);
  }
}
