import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { type Kysely, sql } from "kysely";
import pg from "pg";
import { makePrivate } from "../lib/private-files.js";
import { PgClient } from "./pg-client.js";
import { PGlitePool } from "./pglite-pool.js";
import { CommitAwarePostgresDialect, RetryingKysely } from "./retrying-kysely.js";
import type { DB } from "./schema.js";
import { TYPE_PARSERS } from "./types.js";

export type Db = Kysely<DB>;

export interface Database {
  db: Db;
  driver: "postgres" | "pglite";
  /** Round-trips a trivial query; throws when the database is unreachable. */
  ping(): Promise<void>;
  /**
   * Calls `onNotify` for every NOTIFY on `channel` (sent at commit) until the returned function is
   * called. PostgreSQL: a connection of its own outside the pool, re-opened after a loss (then
   * `onNotify` is called once: notifications may have been missed). PGlite: the instance's listener.
   */
  listen?(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  /**
   * PGlite only: its data directory as one gzipped tarball (PGlite's `dumpDataDir`), taken while
   * holding the single connection, so no transaction is half-way; `stablegate backup` writes it
   * and `snapshot` (below) reads it back.
   */
  dumpDataDir?(): Promise<Blob>;
  close(): Promise<void>;
}

export type DatabaseOptions =
  | { kind: "postgres"; url: string; poolSize: number; applicationName?: string }
  /**
   * `dataDir` undefined = in memory (tests). `snapshot`: a data directory dumped by PGlite's
   * `dumpDataDir` to start from (tests start from a migrated template: no initdb, no migrations).
   */
  | { kind: "pglite"; dataDir: string | undefined; snapshot?: Blob };

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.kind === "postgres") {
    const pool = new pg.Pool({
      Client: PgClient,
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
    // A client checked out of the pool has no listener of the pool's: when its backend is ended
    // between two statements of a transaction (pg_terminate_backend, a failover), its 'error'
    // event would be an uncaught exception that ends the process. The error reaches the code
    // anyway: the running statement fails with it, the next one with "not queryable" (a transient
    // fault, retried: db/transient.ts), and the pool drops the client when it is released.
    pool.on("connect", (client) => {
      client.on("error", () => {});
    });
    pool.on("release", (_err, client) => {
      (client as unknown as PgClient).forgetHeldBegin();
    });
    const url = options.url;
    return {
      ...wrap(new RetryingKysely<DB>({ dialect: new CommitAwarePostgresDialect({ pool }) }), "postgres"),
      listen: (channel, onNotify) => listenPostgres(url, channel, onNotify),
    };
  }
  // The same extensions as the PostgreSQL deployment (pg_trgm for literal substring search).
  const pglite = await PGlite.create(options.dataDir, {
    extensions: { pg_trgm },
    ...(options.snapshot ? { loadDataDir: options.snapshot } : {}),
  });
  const pglitePool = new PGlitePool(pglite);
  const wrapped = wrap(
    new RetryingKysely<DB>({ dialect: new CommitAwarePostgresDialect({ pool: pglitePool }) }),
    "pglite",
  );
  const dataDir = options.dataDir;
  // PGlite's file system layer (Emscripten's NODEFS) unpacks a new data folder with explicit
  // 0666/0755 modes, whatever the umask: make it private (docs/decisions/security.md) once open, and again once
  // closed. What PostgreSQL creates while running is 0600/0700 already (and under umask 0o077).
  if (dataDir) await makePrivate(dataDir);
  return {
    ...wrapped,
    async close() {
      await wrapped.close();
      if (dataDir) await makePrivate(dataDir);
    },
    async dumpDataDir() {
      const held = await pglitePool.connect();
      try {
        return await pglite.dumpDataDir("gzip");
      } finally {
        held.release();
      }
    },
    // LISTEN/UNLISTEN take the single connection, so they never land inside someone's transaction.
    async listen(channel, onNotify) {
      const held = await pglitePool.connect();
      let unlisten: () => Promise<void>;
      try {
        unlisten = await pglite.listen(channel, () => onNotify());
      } finally {
        held.release();
      }
      return async () => {
        if (pglite.closed) return;
        const h = await pglitePool.connect();
        try {
          if (!pglite.closed) await unlisten();
        } finally {
          h.release();
        }
      };
    },
  };
}

/** LISTEN on a dedicated connection; reconnects (every second while down) until stopped. */
async function listenPostgres(url: string, channel: string, onNotify: () => void) {
  const quoted = `"${channel.replaceAll('"', '""')}"`;
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const open = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url, application_name: "stablegate-listen" });
    c.on("notification", (n) => {
      if (n.channel === channel) onNotify();
    });
    const lost = () => {
      if (client !== c) return;
      client = undefined;
      void c.end().catch(() => {});
      if (!stopped) retry = setTimeout(() => void open().then(onNotify, () => {}), 1_000);
    };
    c.on("error", lost);
    c.on("end", lost);
    client = c;
    try {
      await c.connect();
      await c.query(`listen ${quoted}`);
    } catch (err) {
      lost();
      throw err;
    }
  };
  try {
    await open();
  } catch (err) {
    stopped = true;
    clearTimeout(retry);
    throw err;
  }
  return async () => {
    stopped = true;
    clearTimeout(retry);
    const c = client;
    client = undefined;
    await c?.end().catch(() => {});
  };
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
