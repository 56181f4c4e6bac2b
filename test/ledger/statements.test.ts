import { readFile } from "node:fs/promises";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { Kysely, PostgresDialect, type PostgresPool } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { PgClient } from "../../src/db/pg-client.js";
import { PGlitePool } from "../../src/db/pglite-pool.js";
import type { DB } from "../../src/db/schema.js";
import { TYPE_PARSERS } from "../../src/db/types.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import { creditDeposit, holdFunds, releaseHold, settleHold } from "../../src/ledger/operations.js";
import type { PostResult } from "../../src/ledger/post.js";
import { onPostgres, openTestDatabase } from "../support/db.js";
import { ctx, newMerchant } from "./support.js";

/**
 * Issue 23: a posting is at most two statements. Counted on the wire — every text the driver
 * sends (node-postgres `Client.query`, or PGlite's pool client), BEGIN and COMMIT included — so
 * nothing can hide in a plugin or a second code path. Statements, not round trips: on PostgreSQL
 * the client writes BEGIN together with the next statement (test/db/pipelined-begin.test.ts
 * counts those).
 */
interface Counting {
  db: Db;
  statements: string[];
  close(): Promise<void>;
}

async function countingDatabase(): Promise<Counting> {
  const statements: string[] = [];
  if (onPostgres) {
    const base = await openTestDatabase(1);
    // The service's own client class (named prepared statements) with a tap on what it sends.
    class CountingClient extends PgClient {
      override query(config: any, values?: any, callback?: any): any {
        statements.push(typeof config === "string" ? config : String(config?.text));
        return super.query(config, values, callback);
      }
    }
    const pool = new pg.Pool({
      Client: CountingClient,
      connectionString: base.url,
      max: 2,
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          TYPE_PARSERS[oid] ??
          pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
      },
    });
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      statements,
      async close() {
        await db.destroy();
        await base.close();
      },
    };
  }
  const file = inject("pgliteTemplate");
  if (!file) throw new Error("no PGlite template from the global setup");
  const pglite = await PGlite.create(undefined, {
    extensions: { pg_trgm },
    loadDataDir: new Blob([await readFile(file)]),
  });
  const inner = new PGlitePool(pglite);
  const pool: PostgresPool = {
    async connect() {
      const client = await inner.connect();
      return {
        query: ((text: string, parameters?: readonly unknown[]) => {
          statements.push(text);
          return client.query(text, parameters as unknown[]);
        }) as typeof client.query,
        release: () => client.release(),
      };
    },
    end: () => inner.end(),
  };
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return { db, statements, close: () => db.destroy() };
}

let counting: Counting;
beforeAll(async () => {
  counting = await countingDatabase();
});
afterAll(() => counting?.close());

/** Runs `post` in its own transaction; returns what it gave and every statement sent meanwhile. */
async function sent(post: (trx: Db) => Promise<PostResult>) {
  counting.statements.length = 0;
  let result: PostResult | Error;
  try {
    result = await counting.db.transaction().execute(post);
  } catch (err) {
    result = err as Error;
  }
  return { result, statements: counting.statements.map((s) => s.trim().split(/\s+/).slice(0, 4).join(" ")) };
}

const POSTING = expect.stringMatching(/^select r_status, r_posting_id, r_kind,/);

describe(`a posting is one statement (${onPostgres ? "PostgreSQL" : "PGlite"}, counted on the wire)`, () => {
  it("first movement, deposit, hold, release, settle: BEGIN, one statement, COMMIT", async () => {
    const db = counting.db;
    const m = await newMerchant(db);
    const deposit = ctx(m);
    // The merchant's first movement creates its accounts inside the same statement.
    const first = await sent((trx) => creditDeposit(trx, deposit, 100n * UNIT, UNIT));
    expect(first.result).toMatchObject({ status: "posted" });
    expect(first.statements).toEqual(["begin", POSTING, "commit"]);

    const second = await sent((trx) => creditDeposit(trx, ctx(m), 10n * UNIT, 0n));
    expect(second.result).toMatchObject({ status: "posted" });
    expect(second.statements).toEqual(["begin", POSTING, "commit"]);

    const w1 = ctx(m);
    const w2 = ctx(m);
    for (const post of [
      (trx: Db) => holdFunds(trx, w1, 5n * UNIT),
      (trx: Db) => holdFunds(trx, w2, 7n * UNIT),
      (trx: Db) => releaseHold(trx, w1, 5n * UNIT),
      (trx: Db) => settleHold(trx, w2, 7n * UNIT, UNIT),
    ]) {
      const r = await sent(post);
      expect(r.result).toMatchObject({ status: "posted" });
      expect(r.statements).toEqual(["begin", POSTING, "commit"]);
    }
  });

  it("a replay, an insufficient balance and a hold closed the other way are one statement too", async () => {
    const db = counting.db;
    const m = await newMerchant(db);
    const deposit = ctx(m);
    await db.transaction().execute((trx) => creditDeposit(trx, deposit, 3n * UNIT, 0n));

    const replay = await sent((trx) => creditDeposit(trx, deposit, 3n * UNIT, 0n));
    expect(replay.result).toMatchObject({ status: "already_posted" });
    expect(replay.statements).toEqual(["begin", POSTING, "commit"]);

    const short = await sent((trx) => holdFunds(trx, ctx(m, newId("tx")), 4n * UNIT));
    expect(short.result).toEqual({
      status: "insufficient_balance",
      account: "available",
      balance: 3n * UNIT,
      needed: 4n * UNIT,
    });
    expect(short.statements).toEqual(["begin", POSTING, "commit"]);

    const hold = ctx(m);
    await db.transaction().execute((trx) => holdFunds(trx, hold, UNIT));
    await db.transaction().execute((trx) => releaseHold(trx, hold, UNIT));
    const other = await sent((trx) => settleHold(trx, hold, UNIT, 0n));
    expect(other.result).toMatchObject({ code: "INVALID_STATE" });
    expect(other.statements).toEqual(["begin", POSTING, "rollback"]);
  });
});
