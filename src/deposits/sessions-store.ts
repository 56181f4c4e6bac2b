import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { CheckoutSessionRecord, SessionDetection } from "../domain/checkout.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { toRecord } from "../transactions/index.js";

/** SQL of checkout sessions: a `checkout_sessions` row joined to its deposit transaction. */

export async function insertCheckoutSession(
  trx: Db,
  s: {
    id: string;
    merchantId: string;
    environment: Environment;
    network: CurrencyType;
    address: string;
    expiresAt: Date;
    callbackUrl: string | null;
  },
): Promise<void> {
  await trx
    .insertInto("checkout_sessions")
    .values({
      id: s.id,
      merchant_id: s.merchantId,
      environment: s.environment,
      network: s.network,
      address: s.address,
      expires_at: s.expiresAt,
      callback_url: s.callbackUrl,
    })
    .execute();
}

function sessionQuery(db: Db) {
  return db
    .selectFrom("checkout_sessions as s")
    .innerJoin("transactions as t", "t.id", "s.id")
    .selectAll("t")
    .select([
      "s.network as s_network",
      "s.address as s_address",
      "s.expires_at as s_expires_at",
      "s.callback_url as s_callback_url",
      "s.closed_at as s_closed_at",
    ]);
}

type SessionJoinRow = Awaited<ReturnType<ReturnType<typeof sessionQuery>["executeTakeFirstOrThrow"]>>;

function toSession(row: SessionJoinRow): CheckoutSessionRecord {
  return {
    transaction: toRecord(row),
    network: row.s_network,
    address: row.s_address,
    expiresAt: row.s_expires_at,
    callbackUrl: row.s_callback_url,
    metadata: row.metadata,
    closedAt: row.s_closed_at,
  };
}

/** A merchant's session in one environment (anything else is "not found"). */
export async function findCheckoutSession(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  id: string,
): Promise<CheckoutSessionRecord | null> {
  const row = await sessionQuery(db)
    .where("s.id", "=", id)
    .where("s.merchant_id", "=", scope.merchantId)
    .where("s.environment", "=", scope.environment)
    .executeTakeFirst();
  return row ? toSession(row) : null;
}

/**
 * A session by id alone, for the hosted payment page (the id is unguessable: 128 random bits) —
 * limited to the environment whose base URL serves the page.
 */
export async function findPublicCheckoutSession(
  db: Db,
  environment: Environment,
  id: string,
): Promise<CheckoutSessionRecord | null> {
  const row = await sessionQuery(db)
    .where("s.id", "=", id)
    .where("s.environment", "=", environment)
    .executeTakeFirst();
  return row ? toSession(row) : null;
}

/** Sessions by ids (the hosted page's live-status poller reads all watched sessions in one query). */
export async function findCheckoutSessionsByIds(
  db: Db,
  ids: readonly string[],
): Promise<CheckoutSessionRecord[]> {
  if (ids.length === 0) return [];
  const rows = await sessionQuery(db).where("s.id", "in", ids).execute();
  return rows.map(toSession);
}

/**
 * Locks the session row (`for update`) and then reads the session: the one serialisation point of
 * payments, expiry and sandbox pays for a session (every writer of a session's transaction row takes
 * this lock first, so they cannot deadlock). Two statements on purpose: under READ COMMITTED a
 * `select … join … for update of s` that waited for the lock re-checks only the locked row and
 * would return the joined transaction as it was BEFORE the other writer committed; the second
 * statement takes a fresh snapshot after the lock is ours.
 */
export async function lockCheckoutSession(trx: Db, id: string): Promise<CheckoutSessionRecord | null> {
  const locked = await trx
    .selectFrom("checkout_sessions")
    .select("id")
    .where("id", "=", id)
    .forUpdate()
    .executeTakeFirst();
  if (!locked) return null;
  const row = await sessionQuery(trx).where("s.id", "=", id).executeTakeFirst();
  return row ? toSession(row) : null;
}

/** A chain whose time is the clock of the process: the sandbox simulator, which mines on demand. */
export interface ClockTimedChain {
  network: CurrencyType;
  environment: Environment;
}

/**
 * Open sessions whose deadline has passed, oldest first, skipping any another worker holds. The
 * deadline must have passed on the worker's clock AND on the session's chain: its watcher has stored
 * a block with a timestamp at or after `expires_at` (`chain_cursors.chain_time`; a clock-timed chain
 * uses `now`), so no transfer still to be seen can be in time. A session with a transfer in time
 * that is still confirming (an `observed` observation mined before `expires_at`) is left alone.
 */
export async function claimExpiredSessionIds(
  trx: Db,
  now: Date,
  limit: number,
  clockTimedChains: readonly ClockTimedChain[] = [],
): Promise<string[]> {
  const rows = await trx
    .selectFrom("checkout_sessions as s")
    .select("s.id")
    .where("s.closed_at", "is", null)
    .where("s.expires_at", "<=", now)
    .where((eb) =>
      eb.or([
        ...clockTimedChains.map((c) =>
          eb.and([eb("s.network", "=", c.network), eb("s.environment", "=", c.environment)]),
        ),
        eb(
          "s.expires_at",
          "<=",
          eb
            .selectFrom("chain_cursors as c")
            .select("c.chain_time")
            .whereRef("c.network", "=", "s.network")
            .whereRef("c.environment", "=", "s.environment"),
        ),
      ]),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("chain_observations as o")
            .select(sql`1`.as("one"))
            .whereRef("o.network", "=", "s.network")
            .whereRef("o.environment", "=", "s.environment")
            .whereRef("o.address", "=", "s.address")
            .where("o.status", "=", "observed")
            .where(sql<boolean>`coalesce(o.block_time, o.observed_at) < s.expires_at`),
        ),
      ),
    )
    .orderBy("s.expires_at")
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Transfers to the address of a session that are still confirming and were mined before its
 * deadline: while there are any, the session is not closed as failed.
 */
export async function hasConfirmingTransferInTime(trx: Db, session: CheckoutSessionRecord): Promise<boolean> {
  const row = await trx
    .selectFrom("chain_observations as o")
    .select("o.id")
    .where("o.network", "=", session.network)
    .where("o.environment", "=", session.transaction.environment)
    .where("o.address", "=", session.address)
    .where("o.status", "=", "observed")
    .where(sql<boolean>`coalesce(o.block_time, o.observed_at) < ${session.expiresAt}`)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The merchant's underpayment tolerance (basis points) in the session's environment; 0 without settings. */
export async function underpaymentToleranceBp(trx: Db, session: CheckoutSessionRecord): Promise<number> {
  const row = await trx
    .selectFrom("merchant_settings")
    .select("underpayment_tolerance_bp")
    .where("merchant_id", "=", session.transaction.merchantId)
    .where("environment", "=", session.transaction.environment)
    .executeTakeFirst();
  return row?.underpayment_tolerance_bp ?? 0;
}

/**
 * What the chain shows of each session's payment (README.md#money-when-a-payment-counts-and-books-that-match), in ONE query for any number of
 * sessions: over the transfers to its address mined before its deadline and not reorganised away,
 * the first block time, the sum, and the newest block (the least confirmed); confirmations are
 * `head − newest + 1` from the watcher's cursor, capped at the chain's required number.
 */
export async function findSessionDetections(
  db: Db,
  ids: readonly string[],
  required: (network: CurrencyType, environment: Environment) => number,
): Promise<Map<string, SessionDetection>> {
  const out = new Map<string, SessionDetection>();
  if (ids.length === 0) return out;
  const rows = await db
    .selectFrom("checkout_sessions as s")
    .leftJoin("chain_observations as o", (j) =>
      j
        .onRef("o.network", "=", "s.network")
        .onRef("o.environment", "=", "s.environment")
        .onRef("o.address", "=", "s.address")
        .on("o.status", "<>", "reorged")
        .on(sql<boolean>`coalesce(o.block_time, o.observed_at) < s.expires_at`),
    )
    .leftJoin("chain_cursors as c", (j) =>
      j.onRef("c.network", "=", "s.network").onRef("c.environment", "=", "s.environment"),
    )
    .select([
      "s.id",
      "s.network",
      "s.environment",
      "c.head_block",
      sql<Date | string | null>`min(coalesce(o.block_time, o.observed_at))`.as("detected_at"),
      sql<string | null>`sum(o.amount)`.as("detected_amount"),
      sql<string | number | bigint | null>`max(o.block_number)`.as("newest_block"),
    ])
    .where("s.id", "in", ids)
    .groupBy(["s.id", "s.network", "s.environment", "c.head_block"])
    .execute();
  for (const r of rows) {
    const need = required(r.network, r.environment);
    const newest = r.newest_block === null ? null : Number(r.newest_block);
    const head = r.head_block === null ? null : Number(r.head_block);
    const current = newest === null || head === null ? 0 : Math.max(0, Math.min(need, head - newest + 1));
    out.set(r.id, {
      detectedAt: r.detected_at === null ? null : new Date(r.detected_at),
      detectedAmount: r.detected_amount === null ? 0n : BigInt(r.detected_amount),
      confirmations: { current, required: need },
    });
  }
  return out;
}

export async function closeCheckoutSession(trx: Db, id: string, closedAt: Date): Promise<void> {
  await trx.updateTable("checkout_sessions").set({ closed_at: closedAt }).where("id", "=", id).execute();
}
