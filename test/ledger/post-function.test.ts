import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, Db } from "../../src/db/database.js";
import { transactionOnce } from "../../src/db/retrying-kysely.js";
import type { AccountKind } from "../../src/db/tables/ledger.js";
import { AppError } from "../../src/domain/errors.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import { getBalances } from "../../src/ledger/balances.js";
import {
  creditDeposit,
  holdFunds,
  releaseHold,
  requirePosted,
  settleHold,
} from "../../src/ledger/operations.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { onPostgres, openTestDatabase } from "../support/db.js";
import { ctx, fund, newMerchant } from "./support.js";

/**
 * The guarantees the posting statement (`ledger_post`, migration 0016) took over from the code,
 * each checked through the public operations and, where the code could be bypassed, by calling
 * the database function directly.
 */
let database: Database;
let db: Db;
beforeAll(async () => {
  database = await openTestDatabase(20);
  db = database.db;
});
afterAll(() => database?.close());

const balanceOf = async (merchantId: string) =>
  (await getBalances(db, merchantId, "sandbox")).find((b) => b.currencyType === "USDT-TRC20")!;

/** Journal size and one merchant's balances: what "nothing was written" compares. */
async function snapshot(merchantId: string) {
  const { postings, entries } = await verifyLedger(db);
  const b = await balanceOf(merchantId);
  return { postings, entries, available: b.available, held: b.held };
}

/** The id of an account in sandbox USDT-TRC20: a merchant's (`available`, `held`) or `system`'s. */
async function accountId(trx: Db, owner: string, kind: AccountKind): Promise<string> {
  const row = await trx
    .selectFrom("ledger_accounts")
    .select("id")
    .where("owner", "=", owner)
    .where("environment", "=", "sandbox")
    .where("currency_type", "=", "USDT-TRC20")
    .where("kind", "=", kind)
    .executeTakeFirstOrThrow();
  return row.id;
}

/** `ledger_post` called directly, as buggy code or a hand-written script could. */
function rawPost(trx: Db, merchantId: string, key: string, kind: string, lines: [string, bigint][]) {
  return sql<{ r_status: string; r_kind: string | null; r_balance: string | null; r_needed: string | null }>`
    select r_status, r_kind, r_balance, r_needed from ledger_post(${key}, ${kind}, 'sandbox', 'USDT-TRC20',
      ${merchantId}, ${null}, ${lines.map((l) => l[0])}::text[], ${lines.map((l) => l[1].toString())}::numeric[])`.execute(
    trx,
  );
}

describe("idempotency key", () => {
  it("a replay answers the first posting's id and writes nothing", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 20n);
    const c = ctx(m);
    const first = await db.transaction().execute((trx) => holdFunds(trx, c, 5n * UNIT));
    expect(first.status).toBe("posted");
    const before = await snapshot(m);
    // Same key, even with another amount: the business event was posted; it is not posted again.
    for (const amount of [5n * UNIT, 6n * UNIT]) {
      const again = await db.transaction().execute((trx) => holdFunds(trx, c, amount));
      expect(again).toEqual({
        status: "already_posted",
        postingId: (first as { postingId: string }).postingId,
      });
    }
    expect(await snapshot(m)).toEqual(before);
  });

  it("closing a hold the other way is INVALID_STATE and writes nothing", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 10n);
    const c = ctx(m);
    await db.transaction().execute((trx) => holdFunds(trx, c, 4n * UNIT));
    await db.transaction().execute((trx) => releaseHold(trx, c, 4n * UNIT));
    const before = await snapshot(m);
    const err = await db
      .transaction()
      .execute((trx) => settleHold(trx, c, 4n * UNIT, 0n))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({
      code: "INVALID_STATE",
      message: "This transaction's hold was already closed (release).",
    });
    expect(await snapshot(m)).toEqual(before);
  });
});

describe("no negative balance", () => {
  it("the first short line is reported (here `held`), with its balance and the amount needed; nothing written", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 10n);
    const c = ctx(m);
    await db.transaction().execute((trx) => holdFunds(trx, c, 2n * UNIT));
    const before = await snapshot(m);
    const r = await db.transaction().execute((trx) => releaseHold(trx, c, 3n * UNIT));
    expect(r).toEqual({
      status: "insufficient_balance",
      account: "held",
      balance: 2n * UNIT,
      needed: 3n * UNIT,
    });
    expect(await snapshot(m)).toEqual(before);
    // A hold request turns it into the error the API answers with.
    const err = await db
      .transaction()
      .execute(async (trx) => requirePosted(await holdFunds(trx, ctx(m), 9n * UNIT)))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "INSUFFICIENT_BALANCE",
      details: { available: 8, required: 9 },
    });
    expect(await snapshot(m)).toEqual(before);
  });

  it("the database function refuses it too when the code is bypassed", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 1n);
    const before = await snapshot(m);
    const { rows } = await db.transaction().execute((trx) =>
      rawPost(trx, m, `rogue:${newId("tx")}`, "hold", [
        ["available", -2n * UNIT],
        ["held", 2n * UNIT],
      ]),
    );
    expect(rows).toEqual([
      {
        r_status: "insufficient_balance",
        r_kind: "available",
        r_balance: String(UNIT),
        r_needed: String(2n * UNIT),
      },
    ]);
    expect(await snapshot(m)).toEqual(before);
  });

  it("concurrent holds and releases on one merchant never deadlock (accounts locked in id order)", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 100n);
    const held = Array.from({ length: 40 }, () => ctx(m));
    for (const c of held) await db.transaction().execute((trx) => holdFunds(trx, c, UNIT));
    // A hold's lines are available then held, a release's held then available: a posting that
    // locked its accounts line by line would deadlock here; the id order of the lock keeps them
    // apart. One attempt each (a deadlock is retried by `db.transaction()`, which would hide it).
    const tasks = held.flatMap((c) => [
      () => transactionOnce(db).execute((trx) => releaseHold(trx, c, UNIT)),
      () => transactionOnce(db).execute(async (trx) => requirePosted(await holdFunds(trx, ctx(m), UNIT))),
    ]);
    const results = await Promise.allSettled(tasks.map((t) => t()));
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(await balanceOf(m)).toMatchObject({ available: 60n * UNIT, held: 40n * UNIT });
    expect((await verifyLedger(db)).problems).toEqual([]);
  });
});

describe("balanced postings and the first movement", () => {
  it("an unbalanced posting through the database function fails at commit and leaves nothing", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 5n);
    const before = await snapshot(m);
    const key = `rogue:${newId("tx")}`;
    await expect(
      db.transaction().execute(async (trx) => {
        const { rows } = await rawPost(trx, m, key, "deposit", [
          ["chain_incoming", -UNIT],
          ["available", 2n * UNIT],
        ]);
        expect(rows[0]?.r_status).toBe("posted"); // accepted by the statement, refused at COMMIT
      }),
    ).rejects.toThrow(/unbalanced/);
    expect(await snapshot(m)).toEqual(before);
    expect(
      await db.selectFrom("ledger_postings").where("business_key", "=", key).selectAll().execute(),
    ).toEqual([]);
  });

  it("an entry added to a posting after its check, in the same or a later transaction, fails at commit", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 5n);
    const before = await snapshot(m);
    const fees = await accountId(db, "system", "fees");
    const appendTo = (trx: Db, postingId: string) =>
      trx
        .insertInto("ledger_entries")
        .values({ posting_id: postingId, account_id: fees, amount: UNIT })
        .execute();
    // Same transaction: the posting is checked early (SET CONSTRAINTS ... IMMEDIATE), then grows.
    await expect(
      db.transaction().execute(async (trx) => {
        const posted = await creditDeposit(trx, ctx(m), 2n * UNIT, 0n);
        await sql`set constraints all immediate`.execute(trx);
        await sql`set constraints all deferred`.execute(trx);
        await appendTo(trx, (posted as { postingId: string }).postingId);
      }),
    ).rejects.toThrow(/unbalanced/);
    expect(await snapshot(m)).toEqual(before);
    // A later transaction: an entry appended to a committed posting.
    const old = await db.transaction().execute((trx) => creditDeposit(trx, ctx(m), UNIT, 0n));
    const after = await snapshot(m);
    await expect(
      db.transaction().execute((trx) => appendTo(trx, (old as { postingId: string }).postingId)),
    ).rejects.toThrow(/unbalanced/);
    expect(await snapshot(m)).toEqual(after);
  });

  it("concurrent first movements of a new merchant create its accounts once and post every credit", async () => {
    const m = await newMerchant(db);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        transactionOnce(db).execute((trx) => creditDeposit(trx, ctx(m), 2n * UNIT, 0n)),
      ),
    );
    expect(results.every((r) => r.status === "posted")).toBe(true);
    const accounts = await db.selectFrom("ledger_accounts").select("kind").where("owner", "=", m).execute();
    expect(accounts.map((a) => a.kind).sort()).toEqual(["available", "held"]);
    expect(await balanceOf(m)).toMatchObject({ available: 40n * UNIT, held: 0n });
  });
});

describe("deposits applied at commit (migration 0022)", () => {
  it("a deposit's balance is raised at its commit, not before, and matches the journal", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 1n);
    await db.transaction().execute(async (trx) => {
      const posted = await creditDeposit(trx, ctx(m), 5n * UNIT, 0n);
      expect(posted.status).toBe("posted");
      // Written without a lock: the stored balance is still the committed one.
      const mine = (await getBalances(trx, m, "sandbox")).find((b) => b.currencyType === "USDT-TRC20");
      expect(mine?.available).toBe(UNIT);
    });
    expect(await balanceOf(m)).toMatchObject({ available: 6n * UNIT, held: 0n });
    expect((await verifyLedger(db)).problems).toEqual([]);
  });

  it("a hold cannot spend a deposit of its own transaction before it commits (refused, never more)", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 1n);
    const result = await db.transaction().execute(async (trx) => {
      await creditDeposit(trx, ctx(m), 7n * UNIT, 0n);
      return holdFunds(trx, ctx(m), 7n * UNIT);
    });
    expect(result).toEqual({
      status: "insufficient_balance",
      account: "available",
      balance: UNIT,
      needed: 7n * UNIT,
    });
    // The deposit itself committed and is applied.
    expect(await balanceOf(m)).toMatchObject({ available: 8n * UNIT, held: 0n });
    // What the committed balance covers can be held in the same transaction as another deposit.
    const both = await db.transaction().execute(async (trx) => {
      await creditDeposit(trx, ctx(m), 2n * UNIT, 0n);
      return holdFunds(trx, ctx(m), 8n * UNIT);
    });
    expect(both.status).toBe("posted");
    expect(await balanceOf(m)).toMatchObject({ available: 2n * UNIT, held: 8n * UNIT });
    expect((await verifyLedger(db)).problems).toEqual([]);
  });

  it("a deposit checked early (SET CONSTRAINTS ... IMMEDIATE) and then grown is applied once per entry", async () => {
    const m = await newMerchant(db);
    await db.transaction().execute(async (trx) => {
      const posted = await creditDeposit(trx, ctx(m), 5n * UNIT, 0n);
      await sql`set constraints all immediate`.execute(trx); // checks and applies the 5 now
      await sql`set constraints all deferred`.execute(trx);
      // A balanced pair added to the same posting: only these two are applied at commit.
      await trx
        .insertInto("ledger_entries")
        .values([
          {
            posting_id: (posted as { postingId: string }).postingId,
            account_id: await accountId(trx, "system", "chain_incoming"),
            amount: -UNIT,
          },
          {
            posting_id: (posted as { postingId: string }).postingId,
            account_id: await accountId(trx, m, "available"),
            amount: UNIT,
          },
        ])
        .execute();
    });
    expect(await balanceOf(m)).toMatchObject({ available: 6n * UNIT });
    expect((await verifyLedger(db)).problems).toEqual([]);
  });

  it("a deposit rolled back leaves neither balance nor journal", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 3n);
    const before = await snapshot(m);
    await expect(
      db.transaction().execute(async (trx) => {
        await creditDeposit(trx, ctx(m), 4n * UNIT, 0n);
        throw new Error("the flow failed after the credit");
      }),
    ).rejects.toThrow(/flow failed/);
    expect(await snapshot(m)).toEqual(before);
  });

  it("a deposit posting that takes from a merchant account is refused, writing nothing", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 5n);
    const before = await snapshot(m);
    await expect(
      db.transaction().execute((trx) =>
        rawPost(trx, m, `rogue:${newId("tx")}`, "deposit", [
          ["available", -UNIT],
          ["fees", UNIT],
        ]),
      ),
    ).rejects.toThrow(/a deposit takes from no merchant account/);
    expect(await snapshot(m)).toEqual(before);
  });

  it("an entry naming no account fails at commit; accounts cannot be deleted, truncated or renamed, nor the journal truncated", async () => {
    const m = await newMerchant(db);
    await fund(db, m, 1n);
    const before = await snapshot(m);
    const fees = await accountId(db, "system", "fees");
    // A hand-written balanced posting whose second line names an account that does not exist.
    await expect(
      db.transaction().execute(async (trx) => {
        const posting = await trx
          .insertInto("ledger_postings")
          .values({ business_key: `rogue:${newId("tx")}`, kind: "deposit", environment: "sandbox" })
          .returning("id")
          .executeTakeFirstOrThrow();
        await trx
          .insertInto("ledger_entries")
          .values([
            { posting_id: posting.id, account_id: fees, amount: -UNIT },
            { posting_id: posting.id, account_id: "999999999", amount: UNIT },
          ])
          .execute();
      }),
    ).rejects.toThrow(/ledger posting \d+: 1 of its 2 entries name no account/);
    // Balanced entries on real accounts, for a posting that does not exist.
    await expect(
      db.transaction().execute((trx) =>
        trx
          .insertInto("ledger_entries")
          .values([
            { posting_id: "999999999", account_id: fees, amount: -UNIT },
            { posting_id: "999999999", account_id: fees, amount: UNIT },
          ])
          .execute(),
      ),
    ).rejects.toThrow(/ledger posting 999999999 does not exist/);
    expect(await snapshot(m)).toEqual(before);
    for (const statement of [
      sql`delete from ledger_accounts where owner = ${m}`,
      sql`update ledger_accounts set owner = 'someone else' where owner = ${m}`,
      sql`update ledger_accounts set kind = 'held' where id = ${fees}`,
      sql`truncate ledger_accounts cascade`,
      sql`truncate ledger_postings cascade`,
      sql`truncate ledger_entries`,
    ]) {
      await expect(statement.execute(db)).rejects.toThrow(/immutable/);
    }
    expect(await snapshot(m)).toEqual(before);
  });
});

// Needs two transactions at once on different connections: PostgreSQL only.
it.skipIf(!onPostgres)(
  "a credit whose key another transaction writes meanwhile waits for it and answers already_posted, not a second posting",
  async () => {
    // A credit takes no lock before its commit (migration 0022): the second transaction's insert
    // of the same key waits for the first's commit, then finds the key taken and answers it as a
    // replay. (Before 0022 this was a retryable ConcurrentPostingError.)
    const m = await newMerchant(db);
    const c = ctx(m);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let posted!: () => void;
    const firstPosted = new Promise<void>((r) => {
      posted = r;
    });
    const first = db.transaction().execute(async (trx) => {
      const r = await creditDeposit(trx, c, UNIT, UNIT);
      posted();
      await gate;
      return r;
    });
    await firstPosted;
    const second = transactionOnce(db)
      .execute((trx) => creditDeposit(trx, c, UNIT, UNIT))
      .catch((e: unknown) => e);
    // Wait until the second one blocks on the first's uncommitted key, then commit the first.
    for (let i = 0; ; i++) {
      const { rows } = await sql<{ n: string }>`select count(*)::text as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like '%ledger_post(%'`.execute(
        db,
      );
      if (rows[0]?.n === "1") break;
      if (i > 200) throw new Error("the second posting never waited for the first");
      await new Promise((r) => setTimeout(r, 10));
    }
    release();
    const firstResult = await first;
    expect(firstResult).toMatchObject({ status: "posted" });
    expect(await second).toEqual({
      status: "already_posted",
      postingId: (firstResult as { postingId: string }).postingId,
    });
    const postings = await db
      .selectFrom("ledger_postings")
      .select("id")
      .where("business_key", "=", `deposit:${c.transactionId}`)
      .execute();
    expect(postings).toHaveLength(1);
    expect((await verifyLedger(db)).problems).toEqual([]);
  },
);
