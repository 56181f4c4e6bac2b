import { createHash } from "node:crypto";
import { sql } from "kysely";

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

/** The statement name for a text that ends with the `PREPARED` mark, or undefined (run unprepared). */
export function preparedName(text: string): string | undefined {
  return text.endsWith(MARK) ? statementName(text) : undefined;
}
