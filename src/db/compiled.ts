import { type Compilable, CompiledQuery, type QueryResult } from "kysely";
import type { Db } from "./database.js";

/** Stands for one column value while a statement is compiled once. */
class Slot {
  constructor(
    readonly row: string,
    /** The row's position when the statement takes a list of rows, else -1. */
    readonly index: number,
    readonly column: string,
  ) {}
}

type Row = Record<string, unknown>;
type Rows = Record<string, Row | readonly Row[]>;

/** Distinct shapes kept per statement (a multi-row statement has one per row count). */
const MAX_SHAPES = 64;

function shapeOf(row: Row): string {
  let shape = "";
  for (const column of Object.keys(row)) if (row[column] !== undefined) shape += `${column},`;
  return shape;
}

function placeholdersOf(row: Row, name: string, index: number): Row {
  const p: Row = {};
  for (const column of Object.keys(row))
    if (row[column] !== undefined) p[column] = new Slot(name, index, column);
  return p;
}

/**
 * A statement on a hot path, built with the query builder ONCE per shape instead of on every call.
 * `build` receives the statement's row objects (e.g. `{ w: watchedRow, t: transactionRow }`), or
 * lists of them for a multi-row statement (`{ t: [row1, row2] }`), and must use their values only
 * as values (`.values(rows.t)`, `.where("c", "=", rows.k.c)`), never inspect them: the first call
 * builds it with a placeholder per column and records where each lands among the parameters;
 * later calls with the same keys, row counts and columns (the "shape") only fill the parameters
 * in. Keys whose value is `undefined` are left out of the shape, as the query builder leaves them
 * out of an insert.
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
      const value = rows[name] as Row | readonly Row[];
      if (Array.isArray(value)) {
        shape += `${name}[${value.length}]:`;
        for (const row of value as readonly Row[]) shape += `${shapeOf(row)}|`;
      } else shape += `${name}:${shapeOf(value as Row)}`;
      shape += ";";
    }
    let compiled = shapes.get(shape);
    if (!compiled) {
      const placeholders: Rows = {};
      for (const name of Object.keys(rows)) {
        const value = rows[name] as Row | readonly Row[];
        placeholders[name] = Array.isArray(value)
          ? (value as readonly Row[]).map((row, i) => placeholdersOf(row, name, i))
          : placeholdersOf(value as Row, name, -1);
      }
      const q = build(db, placeholders as A).compile();
      compiled = { sql: q.sql, slots: q.parameters.map((v) => (v instanceof Slot ? v : { value: v })) };
      if (shapes.size < MAX_SHAPES) shapes.set(shape, compiled);
    }
    const parameters = compiled.slots.map((s) => {
      if (!(s instanceof Slot)) return s.value;
      const value = rows[s.row] as Row | readonly Row[];
      return (s.index < 0 ? (value as Row) : ((value as readonly Row[])[s.index] as Row))[s.column];
    });
    return db.executeQuery(CompiledQuery.raw(compiled.sql, parameters) as CompiledQuery<R>);
  };
}
