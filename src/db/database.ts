import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { PGlitePool } from "./pglite-pool.js";
import type { DB } from "./schema.js";
import { TYPE_PARSERS } from "./types.js";

export type Db = Kysely<DB>;

export interface Database {
  db: Db;
  driver: "postgres" | "pglite";
  /** Round-trips a trivial query; throws when the database is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseOptions =
  | { kind: "postgres"; url: string; poolSize: number; applicationName?: string }
  /** `dataDir` undefined = in memory (tests). */
  | { kind: "pglite"; dataDir: string | undefined };

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.kind === "postgres") {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      application_name: options.applicationName ?? "stablegate",
      connectionTimeoutMillis: 10_000,
      idleTimeoutMillis: 30_000,
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          TYPE_PARSERS[oid] ??
          pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client that loses its connection emits 'error' on the pool; without a listener
    // that would crash the process. The next query reconnects.
    pool.on("error", () => {});
    return wrap(new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }), "postgres");
  }
  // The same extensions as the PostgreSQL deployment (pg_trgm for literal substring search).
  const pglite = await PGlite.create(options.dataDir, { extensions: { pg_trgm } });
  return wrap(new Kysely<DB>({ dialect: new PostgresDialect({ pool: new PGlitePool(pglite) }) }), "pglite");
}

function wrap(db: Db, driver: Database["driver"]): Database {
  let closed = false;
  return {
    db,
    driver,
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}
