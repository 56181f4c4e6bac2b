import { type Compilable, CompiledQuery, type QueryResult } from "kysely";
import type { Db } from "./database.js";

/** Stands for one column value while a statement is compiled once. */
class Slot {
  constructor(
    readonly row: string,
    readonly column: string,
  ) {}
}

type Rows = Record<string, Record<string, unknown>>;

const MAX_SHAPES = 16;

/**
 * A statement on a hot path, built with the query builder ONCE per shape instead of on every call.
 * `build` receives the statement's row objects (e.g. `{ w: watchedRow, t: transactionRow }`) and
 * must use their values only as values (`.values(rows.t)`, `.where("c", "=", rows.k.c)`), never
 * inspect them: the first call builds it with a placeholder per column and records where each
 * lands among the parameters; later calls with the same keys (the "shape") only fill the
 * parameters in. Keys whose value is `undefined` are left out of the shape, as the query builder
 * leaves them out of an insert.
 *
 * Why: building and compiling the checkout session's three-table insert and the API-key lookup was
 * ~7 % of `serve`'s CPU per session; Kysely has no parameterised statement cache of its own.
 */
export function compiledByShape<A extends Rows, R>(
  build: (db: Db, rows: A) => Compilable<R>,
): (db: Db, rows: A) => Promise<QueryResult<R>> {
  const shapes = new Map<string, { sql: string; slots: (Slot | { value: unknown })[] }>();
  return (db, rows) => {
    let shape = "";
    for (const name of Object.keys(rows)) {
      shape += `${name}:`;
      const row = rows[name] as Record<string, unknown>;
      for (const column of Object.keys(row)) if (row[column] !== undefined) shape += `${column},`;
      shape += ";";
    }
    let compiled = shapes.get(shape);
    if (!compiled) {
      const placeholders: Rows = {};
      for (const name of Object.keys(rows)) {
        const row = rows[name] as Record<string, unknown>;
        const p: Record<string, unknown> = {};
        for (const column of Object.keys(row))
          if (row[column] !== undefined) p[column] = new Slot(name, column);
        placeholders[name] = p;
      }
      const q = build(db, placeholders as A).compile();
      compiled = { sql: q.sql, slots: q.parameters.map((v) => (v instanceof Slot ? v : { value: v })) };
      if (shapes.size < MAX_SHAPES) shapes.set(shape, compiled);
    }
    const parameters = compiled.slots.map((s) =>
      s instanceof Slot ? (rows[s.row] as Record<string, unknown>)[s.column] : s.value,
    );
    return db.executeQuery(CompiledQuery.raw(compiled.sql, parameters) as CompiledQuery<R>);
  };
}
