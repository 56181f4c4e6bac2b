import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, Db } from "../../src/db/database.js";
import { RetryingKysely, transactionOnce } from "../../src/db/retrying-kysely.js";
import {
  CommitOutcomeUnknownError,
  commitOutcomeUnknown,
  isRetryableBeforeCommit,
  isTransientDatabaseError,
  retryTransient,
} from "../../src/db/transient.js";
import { AppError } from "../../src/domain/errors.js";
import { codeToStatus, toAppError } from "../../src/http/errors.js";
import { openTestDatabase } from "../support/db.js";

// Transient database faults (issue 25): which errors are transient, the bounded retries of
// `db.transaction().execute`, and never a retry once COMMIT was sent. The classification and the
// retry loop run on both drivers; the faults themselves (a terminated backend, a deadlock, a
// serialization failure, a connection lost during COMMIT) need a real PostgreSQL server.

/** An error shaped as node-postgres raises it for a server error (code = SQLSTATE). */
const sqlState = (code: string, message = "server error") => Object.assign(new Error(message), { code });
/** A Node system error, as a socket raises it. */
const socketError = (code: string) => Object.assign(new Error(`read ${code}`), { code, syscall: "read" });

describe("classification", () => {
  it.each([
    ["40001", "serialization failure"],
    ["40P01", "deadlock"],
    ["57P01", "admin shutdown (pg_terminate_backend)"],
    ["57P02", "crash shutdown"],
    ["57P03", "cannot connect now"],
    ["53300", "too many connections"],
    ["08006", "connection failure (class 08)"],
    ["08001", "cannot establish a connection (class 08)"],
  ])("SQLSTATE %s (%s) is transient and retried", (code) => {
    expect(isTransientDatabaseError(sqlState(code))).toBe(true);
    expect(isRetryableBeforeCommit(sqlState(code))).toBe(true);
  });

  it.each([
    "Connection terminated unexpectedly",
    "Connection terminated",
    "Client has encountered a connection error and is not queryable",
    "Client was closed and is not queryable",
  ])("node-postgres's %j is transient and retried", (message) => {
    expect(isTransientDatabaseError(new Error(message))).toBe(true);
    expect(isRetryableBeforeCommit(new Error(message))).toBe(true);
  });

  it.each(["timeout exceeded when trying to connect", "Connection terminated due to connection timeout"])(
    "%j (the pool's whole connection timeout) is transient but not retried",
    (message) => {
      expect(isTransientDatabaseError(new Error(message))).toBe(true);
      expect(isRetryableBeforeCommit(new Error(message))).toBe(false);
    },
  );

  it.each(["ECONNRESET", "ECONNREFUSED", "EPIPE"])("a socket's %s is transient", (code) => {
    expect(isTransientDatabaseError(socketError(code))).toBe(true);
    // The same code on something that is not a Node system error (an HTTP client's wrapper) is not.
    expect(isTransientDatabaseError(Object.assign(new Error("x"), { code }))).toBe(false);
  });

  it.each([
    ["unique violation", sqlState("23505")],
    ["protocol violation (08P01, a bug)", sqlState("08P01")],
    ["syntax error", sqlState("42601")],
    ["an AppError", new AppError("INSUFFICIENT_BALANCE", "short")],
    ["a plain Error", new Error("boom")],
    ["a wrapper whose cause is transient", new Error("fetch failed", { cause: socketError("ECONNRESET") })],
    ["a string", "Connection terminated"],
    ["null", null],
  ])("%s is not transient", (_, err) => {
    expect(isTransientDatabaseError(err)).toBe(false);
    expect(isRetryableBeforeCommit(err)).toBe(false);
  });

  it("a COMMIT of unknown outcome is transient (503) but never retried", () => {
    const err = new CommitOutcomeUnknownError(new Error("Connection terminated unexpectedly"));
    expect(isTransientDatabaseError(err)).toBe(true);
    expect(isRetryableBeforeCommit(err)).toBe(false);
  });

  it("a failed COMMIT's outcome is unknown only when its connection was lost with it", () => {
    expect(commitOutcomeUnknown(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(commitOutcomeUnknown(sqlState("57P01"))).toBe(true);
    // Rolled back by the server, refused for a reason of its own, or never sent: definite.
    expect(commitOutcomeUnknown(sqlState("40001"))).toBe(false);
    expect(commitOutcomeUnknown(sqlState("40P01"))).toBe(false);
    expect(commitOutcomeUnknown(sqlState("23505"))).toBe(false);
    expect(
      commitOutcomeUnknown(new Error("Client has encountered a connection error and is not queryable")),
    ).toBe(false);
  });

  it("HTTP: a transient fault is 503 SERVICE_UNAVAILABLE with a generic message, anything else unknown stays 500", () => {
    const unavailable = toAppError(
      sqlState("57P01", "terminating connection due to administrator command"),
      1024,
    );
    expect(unavailable.code).toBe("SERVICE_UNAVAILABLE");
    expect(codeToStatus(unavailable.code)).toBe(503);
    expect(unavailable.message).not.toMatch(/terminat|administrator/);
    expect(toAppError(new CommitOutcomeUnknownError(sqlState("57P01")), 1024).code).toBe(
      "SERVICE_UNAVAILABLE",
    );
    expect(toAppError(sqlState("23505"), 1024).code).toBe("INTERNAL_ERROR");
  });
});

describe("retryTransient", () => {
  const fast = { attempts: 3, baseDelayMs: 2 };

  it("stops after the bounded number of attempts and throws the last error as it was", async () => {
    let calls = 0;
    const last = sqlState("57P01");
    await expect(
      retryTransient(async () => {
        calls += 1;
        throw calls === 3 ? last : sqlState("40P01");
      }, fast),
    ).rejects.toBe(last);
    expect(calls).toBe(3);
  });

  it("does not retry an error that is not transient, nor an unknown commit outcome", async () => {
    for (const err of [
      new AppError("INVALID_STATE", "no"),
      new CommitOutcomeUnknownError(sqlState("57P01")),
    ]) {
      let calls = 0;
      await expect(
        retryTransient(async () => {
          calls += 1;
          throw err;
        }, fast),
      ).rejects.toBe(err);
      expect(calls).toBe(1);
    }
  });

  it("returns the first success, telling onRetry about each retry", async () => {
    let calls = 0;
    const retries: number[] = [];
    const out = await retryTransient(
      async () => {
        calls += 1;
        if (calls < 3) throw new Error("Connection terminated unexpectedly");
        return "done";
      },
      fast,
      (_, next) => retries.push(next),
    );
    expect(out).toBe("done");
    expect(retries).toEqual([2, 3]);
  });
});

describe("db.transaction() retries (both drivers)", () => {
  let database: Database;
  let db: Db;

  beforeAll(async () => {
    database = await openTestDatabase();
    db = database.db;
    await sql`create table transient_probe (id int primary key, n int not null)`.execute(db);
    await sql`insert into transient_probe values (1, 0), (2, 0)`.execute(db);
  });
  afterAll(() => database?.close());

  const counter = async (id = 1) =>
    Number((await sql<{ n: number }>`select n from transient_probe where id = ${id}`.execute(db)).rows[0]?.n);
  const bump = (trx: Db, id = 1) => sql`update transient_probe set n = n + 1 where id = ${id}`.execute(trx);

  it("runs the callback again after a transient failure; only the committed attempt's writes stand", async () => {
    const before = await counter();
    let attempts = 0;
    const out = await db.transaction().execute(async (trx) => {
      attempts += 1;
      expect(trx.isTransaction).toBe(true);
      await bump(trx);
      if (attempts === 1) throw sqlState("40001", "could not serialize access");
      return "ok";
    });
    expect(out).toBe("ok");
    expect(attempts).toBe(2);
    expect(await counter()).toBe(before + 1);
  });

  it("gives up after three attempts and rolls every one back", async () => {
    const before = await counter();
    let attempts = 0;
    await expect(
      db.transaction().execute(async (trx) => {
        attempts += 1;
        await bump(trx);
        throw new Error("Connection terminated unexpectedly");
      }),
    ).rejects.toThrow("Connection terminated unexpectedly");
    expect(attempts).toBe(3);
    expect(await counter()).toBe(before);
  });

  it("does not retry a domain error, nor a transaction opened with transactionOnce", async () => {
    let attempts = 0;
    await expect(
      db.transaction().execute(async () => {
        attempts += 1;
        throw new AppError("INSUFFICIENT_BALANCE", "short");
      }),
    ).rejects.toThrow("short");
    expect(attempts).toBe(1);
    await expect(
      transactionOnce(db).execute(async () => {
        attempts += 1;
        throw new Error("Connection terminated unexpectedly");
      }),
    ).rejects.toThrow("Connection terminated unexpectedly");
    expect(attempts).toBe(2);
  });

  it("keeps the retries on a configured builder (isolation level)", async () => {
    expect(db).toBeInstanceOf(RetryingKysely);
    let attempts = 0;
    await db
      .transaction()
      .setIsolationLevel("serializable")
      .execute(async (trx) => {
        attempts += 1;
        await bump(trx, 2);
        if (attempts === 1) throw sqlState("40P01", "deadlock detected");
      });
    expect(attempts).toBe(2);
    expect(await counter(2)).toBe(1);
  });
});

// PostgreSQL only: these faults need a server with several backends (PGlite is one in-process
// connection: nothing can terminate it, and it never deadlocks or fails to serialize).
describe.skipIf(!process.env.TEST_DATABASE_URL)("real faults on PostgreSQL", () => {
  let database: Database & { url: string | undefined };
  let db: Db;
  let admin: pg.Client;

  beforeAll(async () => {
    database = await openTestDatabase(4);
    db = database.db;
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await sql`create table fault_probe (id int primary key, n int not null)`.execute(db);
    await sql`insert into fault_probe values (1, 0), (2, 0), (3, 0), (4, 0), (5, 0)`.execute(db);
  });
  afterAll(async () => {
    await admin?.end();
    await database?.close();
  });

  const counter = async (id: number) =>
    Number((await admin.query("select n from fault_probe where id = $1", [id])).rows[0]?.n);
  const bump = (trx: Db, id: number) => sql`update fault_probe set n = n + 1 where id = ${id}`.execute(trx);
  const pid = async (trx: Db) =>
    Number((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]?.pid);
  /** Both callbacks of a pair have reached `n`: a rendezvous for the two sides of a conflict. */
  const rendezvous = () => {
    let arrived = 0;
    let open!: () => void;
    const all = new Promise<void>((r) => {
      open = r;
    });
    return async () => {
      arrived += 1;
      if (arrived === 2) open();
      await all;
    };
  };

  it("a backend terminated in the middle of a transaction: the error is transient, the retry commits once", async () => {
    const seen: unknown[] = [];
    let attempts = 0;
    await db.transaction().execute(async (trx) => {
      attempts += 1;
      await bump(trx, 1);
      if (attempts === 1) {
        // From outside, as an operator or a failover would; the client is idle between statements.
        await admin.query("select pg_terminate_backend($1)", [await pid(trx)]);
        await new Promise((r) => setTimeout(r, 100));
        try {
          await bump(trx, 1);
        } catch (err) {
          seen.push(err);
          throw err;
        }
      }
    });
    expect(attempts).toBe(2);
    expect(await counter(1)).toBe(1);
    expect(seen).toHaveLength(1);
    expect(isTransientDatabaseError(seen[0])).toBe(true);
    expect(isRetryableBeforeCommit(seen[0])).toBe(true);
  });

  it("the real 57P01 of a statement whose backend is terminated is transient", async () => {
    const err = await transactionOnce(db)
      .execute((trx) => sql`select pg_terminate_backend(pg_backend_pid())`.execute(trx))
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code ?? (err as Error).message).toMatch(
      /57P01|Connection terminated|not queryable/,
    );
    expect(isTransientDatabaseError(err)).toBe(true);
  });

  it("bounded: a transaction whose backend dies on every attempt runs three times, then fails transient", async () => {
    let attempts = 0;
    const err = await db
      .transaction()
      .execute(async (trx) => {
        attempts += 1;
        await bump(trx, 2);
        await sql`select pg_terminate_backend(pg_backend_pid())`.execute(trx);
      })
      .catch((e: unknown) => e);
    expect(attempts).toBe(3);
    expect(isTransientDatabaseError(err)).toBe(true);
    expect(await counter(2)).toBe(0);
  });

  it("a real deadlock (40P01) is transient; with the retries both transactions commit", async () => {
    // Without retries: one side is the deadlock victim.
    const meet = rendezvous();
    const crossed = (first: number, second: number) =>
      transactionOnce(db).execute(async (trx) => {
        await bump(trx, first);
        await meet();
        await bump(trx, second);
      });
    const results = await Promise.allSettled([crossed(3, 4), crossed(4, 3)]);
    const failed = results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
    expect(failed).toHaveLength(1);
    const victim = failed[0]?.reason as { code?: string } | undefined;
    expect(victim?.code).toBe("40P01");
    expect(isRetryableBeforeCommit(victim)).toBe(true);

    // With them: the victim runs again after the winner commits.
    const before = (await counter(3)) + (await counter(4));
    const meetAgain = rendezvous();
    let attempts = 0;
    const retried = (first: number, second: number) =>
      db.transaction().execute(async (trx) => {
        attempts += 1;
        await bump(trx, first);
        if (attempts <= 2) await meetAgain();
        await bump(trx, second);
      });
    await Promise.all([retried(3, 4), retried(4, 3)]);
    expect(attempts).toBe(3);
    expect((await counter(3)) + (await counter(4))).toBe(before + 4);
  });

  it("a real serialization failure (40001) is transient; with the retries both commit", async () => {
    const before = await counter(5);
    const meet = rendezvous();
    let attempts = 0;
    const errors: unknown[] = [];
    const side = () =>
      db
        .transaction()
        .setIsolationLevel("repeatable read")
        .execute(async (trx) => {
          attempts += 1;
          await sql`select n from fault_probe where id = 5`.execute(trx); // the snapshot is taken here
          if (attempts <= 2) await meet();
          try {
            await bump(trx, 5);
          } catch (err) {
            errors.push(err);
            throw err;
          }
        });
    await Promise.all([side(), side()]);
    expect(errors.map((e) => (e as { code?: string }).code)).toEqual(["40001"]);
    expect(attempts).toBe(3);
    expect(await counter(5)).toBe(before + 2);
  });

  it("a connection lost during COMMIT is never retried: CommitOutcomeUnknownError, one attempt", async () => {
    // A deferred constraint trigger that sleeps makes COMMIT itself take a while; the backend is
    // terminated while it runs.
    await admin.query(`
      create table slow_commit (id int primary key);
      create function slow_commit_check() returns trigger language plpgsql as
        $$ begin perform pg_sleep(2); return null; end $$;
      create constraint trigger slow_commit_trigger after insert on slow_commit
        deferrable initially deferred for each row execute function slow_commit_check();`);
    let attempts = 0;
    let backend = 0;
    const run = db.transaction().execute(async (trx) => {
      attempts += 1;
      backend = await pid(trx);
      await sql`insert into slow_commit values (${attempts})`.execute(trx);
    });
    const settled = run.catch((e: unknown) => e);
    // Wait until that backend is inside its COMMIT (the trigger's pg_sleep), then end it.
    for (let i = 0; i < 100; i++) {
      const r = await admin.query(
        "select 1 from pg_stat_activity where pid = $1 and state = 'active' and query ilike 'commit%'",
        [backend],
      );
      if (r.rowCount) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    await admin.query("select pg_terminate_backend($1)", [backend]);
    const err = await settled;
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(isTransientDatabaseError(err)).toBe(true);
    expect(attempts).toBe(1);
    // (Here it did not commit: the trigger had not finished.)
    expect((await admin.query("select count(*)::int as n from slow_commit")).rows[0].n).toBe(0);
  });
});
