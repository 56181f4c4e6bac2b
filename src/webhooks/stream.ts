import { sql } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import type { SecretBox } from "../lib/secret-box.js";
import { Wakeup } from "../lib/wakeup.js";
import { deliveryHeaders } from "./headers.js";
import { WEBHOOK_CHANNEL } from "./outbox.js";
import { ensureEndpoint, openSecrets } from "./secrets.js";
import { signatureHeaders } from "./signing.js";

/**
 * The webhook stream (`GET /api/v1/webhook/stream`, `stablegate-dev listen`): every new webhook
 * event of one merchant × environment, in a total order, each with the exact body bytes and the
 * headers a delivery of it carries (signed now, with the environment's secrets).
 *
 * Order and the outbox trap. Events are written in the transactions that cause them, so they
 * become visible in COMMIT order, while `created_at` is the writing transaction's START (`now()`):
 * a transaction that started first and commits last makes an event appear "in the past", and a
 * poll of `created_at > cursor` would step over it for good. The stream therefore only emits
 * events older than a horizon below which no transaction can still add one:
 *
 *   horizon = min(now(), start of every other open transaction on this database) − SAFETY_MARGIN
 *
 * read in a statement of its own BEFORE the statement that reads the events (a fresh snapshot):
 * an event with `created_at` < horizon was written by a transaction that had started before the
 * horizon was read, so it was either open then (its start bounds the horizon: contradiction) or
 * already finished — committed, hence visible to the next statement, or rolled back. The margin
 * covers a transaction whose start time is taken microseconds before it shows in
 * `pg_stat_activity`. Emitted events are then ordered by (`created_at`, `id`), and that position is
 * the cursor: `Last-Event-ID` (an event id) resumes exactly after it, without loss or repetition.
 *
 * Limits, on purpose: a transaction open longer than HOLD_CAP (a `pg_dump`, an operator's forgotten
 * `psql` session) stops holding the stream back after that time — an event written by such a
 * transaction could be missed by a stream that was open meanwhile (never by the delivery job, and
 * never lost: it is in the event list). `pg_stat_activity` shows other sessions' transactions only
 * to the same database role (or `pg_read_all_stats`): the gateway's processes share one role.
 * PGlite runs one transaction at a time, so there the horizon is `now()` − margin.
 *
 * Wake-ups: the outbox's `pg_notify` at commit (one LISTEN per process, shared by every stream),
 * plus a poll every `pollMs`: NOTIFY is sent only for events with a destination URL, and a stream
 * is mostly used when there is none yet (a laptop).
 */

/** Below the horizon by this much (see above); also the least latency of a streamed event. */
export const SAFETY_MARGIN_MS = 500;
/** A transaction open longer than this no longer holds the stream back. */
export const HOLD_CAP_SECONDS = 60;
/** Events per read (a stream far behind catches up in batches). */
const BATCH = 100;

/** Where a stream stands: after an emitted event, or (a new stream) from a database time. */
export type StreamCursor = { afterEventId: string } | { fromTime: string };

/** One streamed delivery: what a receiver would get from an attempt made now. */
export interface StreamedDelivery {
  /** The webhook event id (`webhook-id`), the SSE `id:`. */
  id: string;
  type: string;
  transactionStatus: string;
  transactionId: string;
  isTest: boolean;
  createdAt: string;
  /** Lower-case header names, as a delivery sends them. */
  headers: Record<string, string>;
  /** The exact body (UTF-8), as stored and signed. */
  body: string;
}

interface EventRow {
  id: string;
  type: string;
  transaction_status: string;
  transaction_id: string;
  is_test: boolean;
  created_at: Date;
  body: string;
}

/**
 * The horizon (see the file comment), as PostgreSQL text so no precision is lost in JavaScript.
 * Transactions of every client backend on this database count, whatever their state.
 */
export async function readHorizon(db: Db): Promise<string> {
  const { rows } = await sql<{ horizon: string }>`
    select (least(now(), coalesce((
      select min(xact_start) from pg_stat_activity
      where pid <> pg_backend_pid()
        and datname = current_database()
        and xact_start is not null
        and xact_start > now() - ${HOLD_CAP_SECONDS}::int * interval '1 second'
    ), now())) - ${SAFETY_MARGIN_MS}::int * interval '1 millisecond')::text as horizon`.execute(db);
  return (rows[0] as { horizon: string }).horizon;
}

/**
 * The cursor a new stream starts from: after `lastEventId` (null when no event of this merchant and
 * environment has that id — the caller answers 404), else from the current horizon (events written
 * from about now on).
 */
export async function startCursor(
  db: Db,
  merchantId: string,
  environment: Environment,
  lastEventId: string | undefined,
): Promise<StreamCursor | null> {
  if (lastEventId === undefined) return { fromTime: await readHorizon(db) };
  const found = await db
    .selectFrom("webhook_events")
    .select("id")
    .where("id", "=", lastEventId)
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirst();
  return found ? { afterEventId: found.id } : null;
}

/** The next events after `cursor` and below `horizon`, in stream order. */
export async function readAfter(
  db: Db,
  merchantId: string,
  environment: Environment,
  cursor: StreamCursor,
  horizon: string,
  limit = BATCH,
): Promise<EventRow[]> {
  const position =
    "afterEventId" in cursor
      ? sql`(e.created_at, e.id) > (select c.created_at, c.id from webhook_events c where c.id = ${cursor.afterEventId})`
      : sql`e.created_at >= ${cursor.fromTime}::timestamptz`;
  const { rows } = await sql<EventRow>`
    select e.id, e.type, e.transaction_status, e.transaction_id, e.is_test, e.created_at, e.body
    from webhook_events e
    where e.merchant_id = ${merchantId} and e.environment = ${environment}
      and e.created_at < ${horizon}::timestamptz
      and ${position}
    order by e.created_at, e.id
    limit ${limit}`.execute(db);
  return rows;
}

/**
 * The headers of a delivery of `row` made now, with `secrets` (current first, then the previous one
 * during a rotation's grace): the signature scheme is `signing.ts`'s, the other headers are the
 * delivery's (SPEC §6.3).
 */
export function signedDelivery(row: EventRow, secrets: readonly string[], now: Date): StreamedDelivery {
  const headers: Record<string, string> = {
    ...deliveryHeaders({ transactionId: row.transaction_id, isTest: row.is_test }),
    ...signatureHeaders(secrets, row.id, Math.floor(now.getTime() / 1000), Buffer.from(row.body, "utf8")),
  };
  return {
    id: row.id,
    type: row.type,
    transactionStatus: row.transaction_status,
    transactionId: row.transaction_id,
    isTest: row.is_test,
    createdAt: row.created_at.toISOString(),
    headers,
    body: row.body,
  };
}

/** One open stream, as the hub sees it. */
export interface StreamSubscriber {
  merchantId: string;
  environment: Environment;
  cursor: StreamCursor;
  /** Writes one delivery; resolves when the connection can take more (back-pressure). */
  send(delivery: StreamedDelivery): Promise<void>;
  /** Keep-alive comment (proxies close idle connections). */
  heartbeat(): void;
  /** False once the stream must end although the client is still there (its listener stopped). */
  alive(): boolean;
  /** The hub ends the stream (shutdown, `alive()` false). Not called after unsubscribing. */
  end(): void;
}

interface Entry {
  wake: Wakeup;
  stop: AbortController;
  /** Unsubscribed by the route (the client went away): no end() call. */
  gone: boolean;
}

export interface WebhookStreamOptions {
  database: Database;
  box: SecretBox;
  logger: Logger;
  /** Longest wait between two reads of a stream (default 500 ms). */
  pollMs?: number;
  heartbeatMs?: number;
}

/**
 * The streams of one process: one LISTEN on the outbox channel for all of them (opened with the
 * first stream, closed with the last), each stream reading its own events. `close()` ends every
 * stream (graceful shutdown); the route's `alive()` ends them as soon as the listener stops.
 */
export class WebhookStreamHub {
  readonly #db: Db;
  readonly #database: Database;
  readonly #box: SecretBox;
  readonly #log: Logger;
  readonly #pollMs: number;
  readonly #heartbeatMs: number;
  readonly #streams = new Set<Entry>();
  #unlisten: Promise<(() => Promise<void>) | undefined> | undefined;
  #closed = false;

  constructor(options: WebhookStreamOptions) {
    this.#database = options.database;
    this.#db = options.database.db;
    this.#box = options.box;
    this.#log = options.logger;
    this.#pollMs = options.pollMs ?? 500;
    this.#heartbeatMs = options.heartbeatMs ?? 15_000;
  }

  get size(): number {
    return this.#streams.size;
  }

  /** Runs the stream until the subscriber goes (the returned function) or the hub ends it. */
  subscribe(subscriber: StreamSubscriber): () => void {
    if (this.#closed) {
      subscriber.end();
      return () => {};
    }
    const entry: Entry = { wake: new Wakeup(), stop: new AbortController(), gone: false };
    this.#streams.add(entry);
    this.#listen();
    void this.#run(subscriber, entry.wake, entry.stop.signal).finally(() => {
      this.#remove(entry);
      if (!entry.gone) subscriber.end();
    });
    return () => {
      entry.gone = true;
      entry.stop.abort();
      this.#remove(entry);
    };
  }

  /** Ends every stream; later subscriptions end at once. */
  async close(): Promise<void> {
    this.#closed = true;
    // Each run ends at its next await and calls its subscriber's end().
    for (const s of [...this.#streams]) s.stop.abort();
    await this.#stopListening();
  }

  #remove(entry: Entry): void {
    if (!this.#streams.delete(entry)) return;
    if (this.#streams.size === 0) void this.#stopListening();
  }

  #listen(): void {
    if (this.#unlisten || !this.#database.listen) return;
    this.#unlisten = this.#database
      .listen(WEBHOOK_CHANNEL, () => {
        for (const s of this.#streams) s.wake.notify();
      })
      .catch((err: unknown) => {
        this.#log.warn({ err }, "webhook stream: LISTEN unavailable; streams poll");
        return undefined;
      });
  }

  async #stopListening(): Promise<void> {
    const pending = this.#unlisten;
    this.#unlisten = undefined;
    const unlisten = await pending;
    await unlisten?.().catch(() => {});
  }

  async #run(sub: StreamSubscriber, wake: Wakeup, signal: AbortSignal): Promise<void> {
    let cursor = sub.cursor;
    let lastBeat = Date.now();
    while (!signal.aborted && !this.#closed) {
      if (!sub.alive()) return;
      let full = false;
      try {
        const horizon = await readHorizon(this.#db);
        const rows = await readAfter(this.#db, sub.merchantId, sub.environment, cursor, horizon);
        full = rows.length === BATCH;
        if (rows.length > 0) {
          const secrets = await this.#secrets(sub.merchantId, sub.environment);
          for (const row of rows) {
            if (signal.aborted) return;
            await untilAborted(sub.send(signedDelivery(row, secrets, new Date())), signal);
            cursor = { afterEventId: row.id };
            lastBeat = Date.now();
          }
        }
      } catch (err) {
        this.#log.warn({ err }, "webhook stream: read failed; retrying");
      }
      if (Date.now() - lastBeat >= this.#heartbeatMs) {
        sub.heartbeat();
        lastBeat = Date.now();
      }
      if (!full) await wake.wait(this.#pollMs, signal);
    }
  }

  async #secrets(merchantId: string, environment: Environment): Promise<string[]> {
    const endpoint = await ensureEndpoint(this.#db, this.#box, merchantId, environment);
    const { current, previous } = openSecrets(this.#box, endpoint, new Date());
    return previous ? [current, previous] : [current];
  }
}

/** `p`, or nothing once `signal` aborts (a client that stopped reading must not hold a shutdown). */
function untilAborted(p: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => resolve();
    signal.addEventListener("abort", done, { once: true });
    p.then(
      () => {
        signal.removeEventListener("abort", done);
        resolve();
      },
      (err: unknown) => {
        signal.removeEventListener("abort", done);
        reject(err);
      },
    );
  });
}
