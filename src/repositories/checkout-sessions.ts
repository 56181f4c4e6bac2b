import type { Network } from "../chains/network.js";
import type { Db } from "../db/database.js";
import type { CheckoutSessionRecord } from "../domain/checkout.js";
import type { Environment } from "../domain/environment.js";
import { toRecord } from "./transactions.js";

/** SQL of checkout sessions: a `checkout_sessions` row joined to its deposit transaction. */

export async function insertCheckoutSession(
  trx: Db,
  s: {
    id: string;
    merchantId: string;
    environment: Environment;
    network: Network;
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

/** Open sessions whose deadline has passed, oldest first, skipping any another worker holds. */
export async function claimExpiredSessionIds(trx: Db, now: Date, limit: number): Promise<string[]> {
  const rows = await trx
    .selectFrom("checkout_sessions")
    .select("id")
    .where("closed_at", "is", null)
    .where("expires_at", "<=", now)
    .orderBy("expires_at")
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
  return rows.map((r) => r.id);
}

export async function closeCheckoutSession(trx: Db, id: string, closedAt: Date): Promise<void> {
  await trx.updateTable("checkout_sessions").set({ closed_at: closedAt }).where("id", "=", id).execute();
}
