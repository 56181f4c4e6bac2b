import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { PgClient } from "../../src/db/pg-client.js";
import { BEGIN_STATEMENT } from "../../src/db/pipelined-begin.js";
import { PREPARED } from "../../src/db/prepared.js";
import { onPostgres, openTestDatabase } from "../support/db.js";

/**
 * BEGIN goes with a transaction's first parameterised statement, under one Sync (src/db/pipelined-begin.ts).
 * Round trips are counted as the ReadyForQuery messages the connection receives: one per Sync (or
 * simple query) answered.
 */
describe.runIf(onPostgres)("BEGIN pipelined with the first statement (node-postgres)", () => {
  let base: Database & { url: string | undefined };
  let pool: pg.Pool;
  let db: Kysely<{ pipeline_probe: { id: number; note: string } }>;
  let roundTrips = 0;

  beforeAll(async () => {
    base = await openTestDatabase(1);
    await sql`create table pipeline_probe (id int primary key, note text not null)`.execute(base.db);
    pool = new pg.Pool({ Client: PgClient, connectionString: base.url, max: 1 });
    pool.on("connect", (client) => {
      (client as unknown as { connection: pg.Connection }).connection.on("readyForQuery", () => {
        roundTrips++;
      });
    });
    db = new Kysely({ dialect: new PostgresDialect({ pool }) });
    // The connection's first transaction prepares BEGIN (one ordinary round trip more).
    await db.transaction().execute((trx) => sql`select ${1}::int`.execute(trx));
  });
  afterAll(async () => {
    await db?.destroy();
    await base?.close();
  });

  async function counted<T>(fn: () => Promise<T>): Promise<{ result: T; roundTrips: number }> {
    const start = roundTrips;
    const result = await fn();
    return { result, roundTrips: roundTrips - start };
  }

  const count = async () =>
    Number((await sql<{ n: string }>`select count(*) as n from pipeline_probe`.execute(db)).rows[0]?.n);

  it("sends BEGIN with the first statement: one statement and COMMIT are two round trips, not three", async () => {
    const { result, roundTrips: n } = await counted(() =>
      db.transaction().execute(async (trx) => {
        await trx.insertInto("pipeline_probe").values({ id: 1, note: "first" }).execute();
        return (await trx.selectFrom("pipeline_probe").select("note").where("id", "=", 1).execute())[0];
      }),
    );
    expect(result).toEqual({ note: "first" });
    expect(n).toBe(3); // BEGIN + insert, select, COMMIT
    expect(
      (await counted(() => db.transaction().execute((trx) => sql`select ${2}::int`.execute(trx)))).roundTrips,
    ).toBe(2);
  });

  it("runs the first statement inside the transaction: a rollback takes it back", async () => {
    const before = await count();
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto("pipeline_probe").values({ id: 10, note: "rolled back" }).execute();
        const sameTransaction = await sql<{
          same: boolean;
        }>`select now() = statement_timestamp() as same, ${1}::int`.execute(trx);
        expect(sameTransaction.rows[0]?.same).toBe(false); // now() is the transaction's start
        throw new Error("abandon");
      }),
    ).rejects.toThrow("abandon");
    expect(await count()).toBe(before);
  });

  it("a first statement that fails fails the call; nothing stands and the connection goes on", async () => {
    await db.insertInto("pipeline_probe").values({ id: 20, note: "exists" }).execute();
    const before = await count();
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto("pipeline_probe").values({ id: 20, note: "duplicate" }).execute();
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await count()).toBe(before);
    await db.transaction().execute(async (trx) => {
      await trx.insertInto("pipeline_probe").values({ id: 21, note: "after" }).execute();
    });
    expect(await count()).toBe(before + 1);
  });

  it("if BEGIN fails, the statement sent with it never runs (one Sync), and BEGIN is prepared again", async () => {
    // The server forgets the prepared BEGIN behind the client's back: the next Bind of it fails.
    await sql.raw(`deallocate ${BEGIN_STATEMENT}`).execute(db);
    const before = await count();
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto("pipeline_probe").values({ id: 30, note: "must not stand" }).execute();
      }),
    ).rejects.toThrow(/prepared statement "sg_begin" does not exist/);
    expect(await count()).toBe(before); // not autocommitted on its own
    await db.transaction().execute(async (trx) => {
      await trx.insertInto("pipeline_probe").values({ id: 31, note: "prepared again" }).execute();
    });
    expect(await count()).toBe(before + 1);
  });

  it("COMMIT or ROLLBACK with no statement sends nothing and leaves no transaction open", async () => {
    expect((await counted(() => db.transaction().execute(async () => "nothing"))).roundTrips).toBe(0);
    await expect(
      db.transaction().execute(async () => {
        throw new Error("before any statement");
      }),
    ).rejects.toThrow("before any statement");
    // Outside a transaction every statement has its own now().
    const { rows } = await sql<{ open: boolean }>`select now() <> statement_timestamp() as open`.execute(db);
    expect(rows[0]?.open).toBe(false);
    const status = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
      where pid <> pg_backend_pid() and state like 'idle in transaction%' and datname = current_database()`.execute(
      base.db,
    );
    expect(Number(status.rows[0]?.n)).toBe(0);
  });

  it("a first statement without parameters gets BEGIN before it (a script of several statements too)", async () => {
    const before = await count();
    const { roundTrips: n } = await counted(() =>
      db
        .transaction()
        .execute(async (trx) => {
          await sql
            .raw(
              "insert into pipeline_probe values (40, 'script'); insert into pipeline_probe values (41, 'script')",
            )
            .execute(trx);
          throw new Error("abandon the script");
        })
        .catch((err: Error) => err.message),
    );
    expect(n).toBe(3); // BEGIN, the script, ROLLBACK
    expect(await count()).toBe(before);
  });

  it("a BEGIN still held when its client goes back to the service's pool opens nothing for the next borrower", async () => {
    const service = await openTestDatabase(1); // openDatabase's pool, with its release hook
    try {
      await sql`create table pipeline_release (id int primary key)`.execute(service.db);
      // The connection's first transaction prepares BEGIN (sent, not held); the next one holds it.
      await service.db.transaction().execute((trx) => sql`select ${1}::int`.execute(trx));
      const held = await service.db.connection().execute(async (conn) => {
        // What a transaction's BEGIN does, then the connection is given back without COMMIT/ROLLBACK.
        await sql.raw("begin").execute(conn);
        return "held";
      });
      expect(held).toBe("held");
      await sql`insert into pipeline_release values (${1})`.execute(service.db);
      // Seen from another connection: committed on its own, not inside a forgotten transaction.
      const other = new pg.Client({ connectionString: service.url });
      await other.connect();
      try {
        expect((await other.query("select count(*)::int as n from pipeline_release")).rows[0]).toEqual({
          n: 1,
        });
      } finally {
        await other.end();
      }
    } finally {
      await service.close();
    }
  });

  it("a named prepared statement goes with BEGIN too, parsed in the same write the first time", async () => {
    const marked = (trx: Kysely<{ pipeline_probe: { id: number; note: string } }>, id: number) =>
      trx.selectFrom("pipeline_probe").select("note").where("id", "=", id).modifyEnd(PREPARED).execute();
    for (let i = 0; i < 3; i++) {
      const { result, roundTrips: n } = await counted(() =>
        db.transaction().execute((trx) => marked(trx, 20)),
      );
      expect(result).toEqual([{ note: "exists" }]);
      expect(n).toBe(2);
    }
  });
});
