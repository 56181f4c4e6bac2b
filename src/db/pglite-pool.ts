import type { PGlite, Results } from "@electric-sql/pglite";
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from "kysely";
import { Mutex } from "../lib/mutex.js";
import { TYPE_PARSERS } from "./types.js";

/**
 * Presents an embedded PGlite database as the `pg`-style pool that Kysely's PostgresDialect
 * drives, so the embedded and the real PostgreSQL share one dialect, one SQL and one query layer.
 *
 * Written by hand because PGlite is a single connection: a "pool client" here holds a mutex for
 * as long as Kysely holds the connection (a whole transaction included), which serialises access
 * exactly like a pool of size one. The community dialects either do not serialise transactions
 * against concurrent queries or pin other PGlite versions.
 */
export class PGlitePool implements PostgresPool {
  readonly #db: PGlite;
  readonly #mutex = new Mutex();

  constructor(db: PGlite) {
    this.#db = db;
  }

  async connect(): Promise<PostgresPoolClient> {
    const release = await this.#mutex.acquire();
    const db = this.#db;
    let released = false;
    return {
      async query<R>(sql: unknown, parameters?: readonly unknown[]): Promise<PostgresQueryResult<R>> {
        if (typeof sql !== "string") throw new Error("cursor queries are not supported on PGlite");
        const params = parameters ? [...parameters] : [];
        // Parameterless statements go through the simple protocol so migration files with
        // several statements work, as they do with `pg`.
        const result: Results<R> | undefined =
          params.length === 0
            ? ((await db.exec(sql, { parsers: TYPE_PARSERS })).at(-1) as Results<R> | undefined)
            : await db.query<R>(sql, params, { parsers: TYPE_PARSERS });
        const rows = result?.rows ?? [];
        return {
          command: commandOf(sql),
          rowCount: result?.affectedRows ?? rows.length,
          rows,
        } as PostgresQueryResult<R>;
      },
      release() {
        if (!released) {
          released = true;
          release();
        }
      },
    } as PostgresPoolClient;
  }

  async end(): Promise<void> {
    const release = await this.#mutex.acquire();
    try {
      if (!this.#db.closed) await this.#db.close();
    } finally {
      release();
    }
  }
}

function commandOf(sql: string): PostgresQueryResult<unknown>["command"] {
  const word = /^\s*(?:\/\*[\s\S]*?\*\/\s*)?(\w+)/.exec(sql)?.[1]?.toUpperCase();
  switch (word) {
    case "INSERT":
    case "UPDATE":
    case "DELETE":
    case "MERGE":
      return word;
    case "WITH":
      // Kysely only reads rowCount for data-modifying commands; a CTE may be one.
      return /\b(update|delete|insert)\b/i.test(sql) ? "UPDATE" : "SELECT";
    default:
      return "SELECT";
  }
}
