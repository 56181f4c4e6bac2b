import { expressionBuilder, sql } from "kysely";
import type { Db } from "../db/database.js";
import type { CheckoutSessionsTable } from "../db/tables/deposits.js";
import type { CheckoutSessionRecord, SessionDetection, SessionPrice } from "../domain/checkout.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { parseRate } from "../domain/exchange-rate.js";
import { findUnderpaymentToleranceBp } from "../merchants/index.js";
import { joinTransactionOf, toRecord } from "../transactions/index.js";
import {
  chainTimeOf,
  confirmingTransfersInTime,
  hasConfirmingTransferBefore,
  joinObservedPayments,
  type PaymentTarget,
} from "../watcher/index.js";

/**
 * SQL of checkout sessions: a `checkout_sessions` row joined to its deposit transaction. The other
 * tables' parts are their owners' fragments (issue #36), composed here into the same statements:
 * the transaction join (transactions/), the chain's time and the transfers seen (watcher/).
 */

/** References to the columns of the session `s` of a statement. */
const sessionRefs = expressionBuilder<{ s: CheckoutSessionsTable }, "s">();

/**
 * The session `s` of a statement as the target of the watcher's fragments: its address on its
 * chain, and its deadline (`s.expires_at`, as raw text: the statements' text stays as it was).
 */
const SESSION_TARGET: PaymentTarget = {
  network: sessionRefs.ref("s.network"),
  environment: sessionRefs.ref("s.environment"),
  address: sessionRefs.ref("s.address"),
  deadline: sql<Date>`s.expires_at`,
};

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
  const sessions = db.selectFrom("checkout_sessions as s");
  return joinTransactionOf(sessions, sessionRefs.ref("s.id")).select([
    "s.network as s_network",
    "s.address as s_address",
    "s.expires_at as s_expires_at",
    "s.callback_url as s_callback_url",
    "s.closed_at as s_closed_at",
    "s.price_amount as s_price_amount",
    "s.price_currency as s_price_currency",
    "s.exchange_rate as s_exchange_rate",
    "s.rate_source as s_rate_source",
    "s.rate_at as s_rate_at",
    "s.success_url as s_success_url",
    "s.cancel_url as s_cancel_url",
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
    price: sessionPrice(row),
    successUrl: row.s_success_url,
    cancelUrl: row.s_cancel_url,
  };
}

/** The price columns of a session row (migration 0037) as its price; null for a token-priced session. */
function sessionPrice(row: SessionJoinRow): SessionPrice | null {
  const { s_price_amount: amount, s_price_currency: currency, s_exchange_rate: rate } = row;
  if (
    amount === null ||
    currency === null ||
    rate === null ||
    row.s_rate_source === null ||
    row.s_rate_at === null
  )
    return null;
  const parsed = parseRate(rate);
  if (!parsed.ok) throw new Error(`checkout session ${row.id}: stored exchange rate ${rate} unreadable`);
  return {
    amount: BigInt(amount),
    currency,
    rate: parsed.units,
    source: row.s_rate_source,
    at: new Date(row.s_rate_at),
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
        eb("s.expires_at", "<=", chainTimeOf(SESSION_TARGET)),
      ]),
    )
    .where(({ not, exists }) => not(exists(confirmingTransfersInTime(SESSION_TARGET))))
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
  return hasConfirmingTransferBefore(trx, {
    network: session.network,
    environment: session.transaction.environment,
    address: session.address,
    deadline: session.expiresAt,
  });
}

/** The merchant's underpayment tolerance (basis points) in the session's environment; 0 without settings. */
export async function underpaymentToleranceBp(trx: Db, session: CheckoutSessionRecord): Promise<number> {
  return findUnderpaymentToleranceBp(trx, session.transaction.merchantId, session.transaction.environment);
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
  const sessions = db
    .selectFrom("checkout_sessions as s")
    .select(["s.id", "s.network", "s.environment"])
    .where("s.id", "in", ids)
    .groupBy(["s.id", "s.network", "s.environment"]);
  const rows = await joinObservedPayments(sessions, SESSION_TARGET).execute();
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
