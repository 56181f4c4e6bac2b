import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { SecretBox } from "../lib/secret-box.js";
import { Wakeup } from "../lib/wakeup.js";
import { deliveryHeaders } from "./headers.js";
import { WEBHOOK_CHANNEL } from "./outbox.js";
import { ensureEndpoint, openSecrets } from "./secrets.js";
import { signatureHeaders } from "./signing.js";
import { type StreamLimits, StreamSlots } from "./stream-slots.js";

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
 * A stream's position before its first event, as the SSE `id:` it sends when it opens: `pos_` and
 * the start time in microseconds since 1970. Sent back as `Last-Event-ID`, it resumes from there,
 * so a client that reconnects before any event came (a stream ended by its lifetime, a drop) misses
 * nothing either. It names a time, nothing of a merchant.
 */
const POSITION = /^pos_(\d{1,18})$/;

/** The position token of a `fromTime` cursor. */
export async function positionToken(db: Db, fromTime: string): Promise<string> {
  const { rows } = await sql<{ micros: string }>`
    select (extract(epoch from ${fromTime}::timestamptz) * 1000000)::bigint::text as micros`.execute(db);
  return `pos_${(rows[0] as { micros: string }).micros}`;
}

/**
 * The cursor a new stream starts from: after `lastEventId` (404 NOT_FOUND when no event of this
 * merchant and environment has that id), from a position token (`positionToken`), else
 * from the current horizon (events written from about now on).
 */
export async function startCursor(
  db: Db,
  merchantId: string,
  environment: Environment,
  lastEventId: string | undefined,
): Promise<StreamCursor> {
  if (lastEventId === undefined) return { fromTime: await readHorizon(db) };
  const position = POSITION.exec(lastEventId)?.[1];
  if (position !== undefined) {
    const { rows } = await sql<{ t: string }>`
      select (timestamptz 'epoch' + ${position}::bigint * interval '1 microsecond')::text as t`.execute(db);
    return { fromTime: (rows[0] as { t: string }).t };
  }
  const found = await db
    .selectFrom("webhook_events")
    .select("id")
    .where("id", "=", lastEventId)
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirst();
  if (!found) throw AppError.notFound("No webhook event with this Last-Event-ID in this environment.");
  return { afterEventId: found.id };
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
 * delivery's (docs/merchants/webhooks.md#the-headers).
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

/**
 * Why the hub ended a stream (the route tells the client in a last `event: end`):
 * - `access`: the re-authorisation refused the credential (revoked or rotated pair, merchant
 *   suspended, IP allowlist, the member the pair acts for removed or demoted): `error` is what a
 *   new request would be answered;
 * - `lifetime`: the stream reached its maximum lifetime (reconnect at once with `Last-Event-ID`);
 * - `unavailable`: its access or its place could not be confirmed for a while (reconnect later);
 * - `shutdown`: the process is stopping (reconnect later; another instance may serve).
 */
export type StreamEnd =
  | { reason: "access"; error: { code: string; message: string; details?: Record<string, unknown> } }
  | { reason: "lifetime" }
  | { reason: "unavailable" }
  | { reason: "shutdown" };

/** One open stream, as the hub sees it. */
export interface StreamSubscriber {
  merchantId: string;
  environment: Environment;
  /** The key pair the stream was opened with (its place is counted per key). */
  apiKeyId: string;
  cursor: StreamCursor;
  /** Writes one delivery; resolves when the connection can take more (back-pressure). */
  send(delivery: StreamedDelivery): Promise<void>;
  /** Keep-alive comment (proxies close idle connections). */
  heartbeat(): void;
  /** False once the stream must end although the client is still there (its listener stopped). */
  alive(): boolean;
  /**
   * Re-authorises the stream's credential now, as a new request with it would be: resolves while
   * it may still stream; rejects with an `AppError` of a refusal (401/403) when it may not. Any
   * other rejection means "could not tell" (the database): retried.
   */
  authorize(): Promise<void>;
  /** The hub ends the stream, saying why. Not called after unsubscribing. */
  end(why: StreamEnd): void;
}

interface Entry {
  sub: StreamSubscriber;
  wake: Wakeup;
  stop: AbortController;
  slotId: string;
  lifetime: NodeJS.Timeout;
  /** When its access was last confirmed (ms, process clock). */
  authorizedAt: number;
  /** Ended or unsubscribed: nothing more happens to it. */
  done: boolean;
}

export interface WebhookStreamOptions {
  database: Database;
  box: SecretBox;
  logger: Logger;
  /** Caps per key, per merchant and in total, counted across instances (`stream-slots.ts`). */
  limits: StreamLimits;
  /** A stream ends after this long (the client reconnects with `Last-Event-ID`). Default 1 h. */
  maxLifetimeMs?: number;
  /** Every open stream is re-authorised this often besides on access notifications. Default 5 s. */
  reauthMs?: number;
  /** Longest wait between two reads of a stream (default 500 ms). */
  pollMs?: number;
  heartbeatMs?: number;
  /** Lease of a stream's place (default 30 s, renewed every third of it). */
  leaseSeconds?: number;
}

/** Changes that can take an API key pair's access away are notified here (triggers of migration 0027). */
export const ACCESS_CHANNEL = "stablegate_access";

/**
 * The streams of one process. Each stream reads its own events; the process LISTENs once on the
 * outbox channel (new events) and once on the access channel (re-authorise now), both opened with
 * the first stream and closed with the last.
 *
 * Re-authorisation (issue #34 finding 5, docs/decisions/webhooks.md#the-webhook-streams-access-and-places-issue-34-findings-5-and-9): every stream's credential is checked again
 * by its subscriber's `authorize()` (the API-key channel's own decision, read afresh) on every
 * access notification and every `reauthMs`, all streams of the process together (their lookups
 * share statements). A refusal ends the stream at once; so does an access that could not be
 * confirmed for three intervals (at least 15 s). Every stream also ends after `maxLifetimeMs`.
 *
 * Places (finding 9): a stream holds a place in the shared `webhook_streams` table from before its
 * first byte until it ends; the hub renews its places' leases. `close()` ends every stream
 * (graceful shutdown); the route's `alive()` ends them as soon as the listener stops.
 */
export class WebhookStreamHub {
  readonly #db: Db;
  readonly #database: Database;
  readonly #box: SecretBox;
  readonly #log: Logger;
  readonly #pollMs: number;
  readonly #heartbeatMs: number;
  readonly #maxLifetimeMs: number;
  readonly #reauthMs: number;
  readonly #slots: StreamSlots;
  readonly #streams = new Set<Entry>();
  /** The LISTEN of each channel, opened or being opened (a failed one is removed, to be retried). */
  readonly #listening = new Map<string, Promise<(() => Promise<void>) | undefined>>();
  /** Bumped when the streams stop: a LISTEN that opens after that is closed at once. */
  #generation = 0;
  #running = false;
  #timers: NodeJS.Timeout[] = [];
  #rechecking: Promise<void> | undefined;
  #recheckAgain = false;
  #closed = false;

  constructor(options: WebhookStreamOptions) {
    this.#database = options.database;
    this.#db = options.database.db;
    this.#box = options.box;
    this.#log = options.logger;
    this.#pollMs = options.pollMs ?? 500;
    this.#heartbeatMs = options.heartbeatMs ?? 15_000;
    this.#maxLifetimeMs = options.maxLifetimeMs ?? 3_600_000;
    this.#reauthMs = options.reauthMs ?? 5_000;
    const instanceId = `${hostname()}:${process.pid}:${randomBytes(6).toString("hex")}`;
    this.#slots = new StreamSlots(this.#db, instanceId, options.limits, options.leaseSeconds);
  }

  get size(): number {
    return this.#streams.size;
  }

  /**
   * Takes the stream's place (429 `RATE_LIMITED` when a cap is reached: nothing is written yet),
   * then runs it until the subscriber goes (the returned function) or the hub ends it.
   */
  async subscribe(sub: StreamSubscriber): Promise<() => void> {
    if (this.#closed) {
      sub.end({ reason: "shutdown" });
      return () => {};
    }
    const slotId = await this.#slots.acquire(sub);
    const entry: Entry = {
      sub,
      wake: new Wakeup(),
      stop: new AbortController(),
      slotId,
      lifetime: setTimeout(() => this.#finish(entry, { reason: "lifetime" }), this.#maxLifetimeMs),
      authorizedAt: Date.now(),
      done: false,
    };
    entry.lifetime.unref();
    if (this.#closed) {
      this.#finish(entry, { reason: "shutdown" });
      return () => {};
    }
    this.#streams.add(entry);
    this.#start();
    void this.#run(sub, entry.wake, entry.stop.signal).finally(() => {
      this.#finish(entry, { reason: "shutdown" });
    });
    return () => this.#finish(entry, null);
  }

  /** Re-authorises every open stream now (what an access notification does). */
  recheck(): Promise<void> {
    if (this.#rechecking) {
      this.#recheckAgain = true;
      return this.#rechecking;
    }
    this.#rechecking = (async () => {
      do {
        this.#recheckAgain = false;
        await this.#recheckAll();
      } while (this.#recheckAgain && !this.#closed);
    })().finally(() => {
      this.#rechecking = undefined;
    });
    return this.#rechecking;
  }

  /** Ends every stream; later subscriptions end at once. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const e of [...this.#streams]) this.#finish(e, { reason: "shutdown" });
    await this.#stop();
  }

  /** Ends a stream once: its run stops, its place is given back, its subscriber told why (null: it went itself). */
  #finish(entry: Entry, why: StreamEnd | null): void {
    if (entry.done) return;
    entry.done = true;
    entry.stop.abort();
    clearTimeout(entry.lifetime);
    this.#slots.release([entry.slotId]).catch((err: unknown) => {
      this.#log.warn({ err }, "webhook stream: place not given back; its lease runs out");
    });
    if (this.#streams.delete(entry) && this.#streams.size === 0) void this.#stop();
    if (why) entry.sub.end(why);
  }

  async #recheckAll(): Promise<void> {
    const now = Date.now();
    const grace = Math.max(3 * this.#reauthMs, 15_000);
    await Promise.all(
      [...this.#streams].map(async (e) => {
        if (e.done) return;
        try {
          await e.sub.authorize();
          e.authorizedAt = Date.now();
        } catch (err) {
          if (err instanceof AppError && (err.code === "FORBIDDEN" || err.code === "INVALID_AUTH")) {
            const error = {
              code: err.code,
              message: err.message,
              ...(Object.keys(err.details).length > 0 ? { details: err.details } : {}),
            };
            this.#finish(e, { reason: "access", error });
            return;
          }
          this.#log.warn({ err }, "webhook stream: re-authorisation failed; retrying");
          if (now - e.authorizedAt > grace) this.#finish(e, { reason: "unavailable" });
        }
      }),
    );
  }

  async #renew(): Promise<void> {
    const byId = new Map([...this.#streams].map((e) => [e.slotId, e]));
    try {
      for (const lost of await this.#slots.renew([...byId.keys()])) {
        const e = byId.get(lost);
        if (e) this.#finish(e, { reason: "unavailable" });
      }
    } catch (err) {
      this.#log.warn({ err }, "webhook stream: lease renewal failed; retrying");
    }
  }

  /** With the first stream: the two LISTENs and the re-check and renewal timers. */
  #start(): void {
    if (this.#running) return;
    this.#running = true;
    const every = (ms: number, fn: () => void) => {
      const t = setInterval(fn, ms);
      t.unref();
      this.#timers.push(t);
    };
    every(this.#reauthMs, () => void this.recheck());
    every((this.#slots.leaseSeconds * 1000) / 3, () => void this.#renew());
    // A LISTEN that could not be opened is tried again every second (a lost one reopens itself).
    every(1_000, () => this.#listen());
    this.#listen();
  }

  #listen(): void {
    const listen = this.#database.listen?.bind(this.#database);
    if (!listen) return;
    const channels: [string, () => void][] = [
      [
        WEBHOOK_CHANNEL,
        () => {
          for (const s of this.#streams) s.wake.notify();
        },
      ],
      [ACCESS_CHANNEL, () => void this.recheck()],
    ];
    for (const [channel, onNotify] of channels) {
      if (this.#listening.has(channel)) continue;
      const generation = this.#generation;
      const opening = listen(channel, onNotify).then(
        (unlisten) => {
          if (generation !== this.#generation) {
            void unlisten().catch(() => {});
            return undefined;
          }
          // Opened late: a notification may have been missed meanwhile.
          onNotify();
          return unlisten;
        },
        (err: unknown) => {
          this.#log.warn(
            { err, channel },
            "webhook stream: LISTEN unavailable; retrying (streams poll meanwhile)",
          );
          if (generation === this.#generation) this.#listening.delete(channel);
          return undefined;
        },
      );
      this.#listening.set(channel, opening);
    }
  }

  async #stop(): Promise<void> {
    this.#running = false;
    this.#generation++;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    const open = [...this.#listening.values()];
    this.#listening.clear();
    for (const unlisten of await Promise.all(open)) await unlisten?.().catch(() => {});
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
