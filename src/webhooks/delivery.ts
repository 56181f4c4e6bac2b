import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Agent, Dispatcher } from "undici";
import type { Db } from "../db/database.js";
import { PREPARED } from "../db/prepared.js";
import type { WebhookEndpointRow, WebhookEventRow } from "../db/tables/webhooks.js";
import { retriedFailureLevel } from "../db/transient.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { SecretBox } from "../lib/secret-box.js";
import { Wakeup } from "../lib/wakeup.js";
import { AttemptSigner } from "./attempt-signer.js";
import { deliveryHeaders } from "./headers.js";
import { NO_URL_ERROR } from "./outbox.js";
import { testWebhookBody } from "./payload.js";
import { ensureEndpoint, openSecrets } from "./secrets.js";
import { createGuardedAgent, type Resolve, SsrfBlockedError, ssrfPolicy, systemResolve } from "./ssrf.js";

/**
 * Delivery of webhook events (SPEC §6.5, CONTRACT §5).
 *
 * Queue: a pending event has one row in `webhook_due` (when it is due, who holds it); delivered and
 * failed events have none. Claiming: a worker takes due rows with `FOR UPDATE SKIP LOCKED` and, in
 * the same statement, leases them: `locked_by` = a random claim token, `locked_until` = now +
 * lease. Any number of workers on any number of machines can run this; each due attempt goes to
 * one of them. A worker that dies mid-attempt leaves the row leased; once `locked_until` has
 * passed another worker re-claims it (at-least-once: the receiver may see that attempt twice, with
 * the same `webhook-id`). The lease touches no indexed column, so on the narrow row's spare page
 * room it is a HOT update. The result is written only while the claim token still matches: the
 * queue row is deleted (or moved to the next retry), the event updated in columns no index covers
 * (a HOT update too) and the attempt row inserted, in one statement. A manual retry of a delivered
 * or failed event, which has no queue row, leases the event row itself.
 *
 * Pipeline of a worker (`drain`): claims come in batches (one statement also returns each event's
 * endpoint URL and sealed secrets), a batch is prefetched while the previous one is in flight so
 * the HTTP slots never wait for the database, a slot is freed as soon as its answer is read, and
 * results are written by a group commit (one statement per batch of finished attempts, the next
 * batch forming while the previous one is written). `run` keeps draining and, when idle, waits for
 * a NOTIFY from the outbox (sent at commit) or the poll interval, whichever comes first.
 *
 * Schedule: attempt 1 at once; after the n-th automatic failure the next one waits
 * `WEBHOOK_RETRY_SCHEDULE[n-1]`; after the last retry fails the event is `failed`. Manual retry:
 * one attempt now whatever the status; it never consumes or reschedules the automatic series.
 * Time comes from the database (`now()`), the one clock all workers share.
 */

export const RESPONSE_BODY_LIMIT = 1024;
/** Bytes of an answer we read at most (the rest is dropped with the connection). */
const RESPONSE_READ_LIMIT = 64 * 1024;

export interface DeliveryOptions {
  db: Db;
  box: SecretBox;
  logger: Logger;
  retryScheduleMs: readonly number[];
  timeoutMs: number;
  ssrfAllowCidrs: readonly string[];
  /** `WEBHOOK_ALLOWED_PORTS` (default: its default); a stored URL on another port fails at dial time. */
  allowedPorts?: readonly number[];
  /** How long a claim holds an event (default: the timeout + 5 s). */
  leaseMs?: number;
  /** Attempts in flight per worker (default 64). */
  concurrency?: number;
  /**
   * Events per claim statement (default: twice the concurrency, at most 256). The next claim is
   * made while half of the last one is still waiting.
   */
  claimBatch?: number;
  /** Name recorded with each attempt (the worker instance). */
  workerId?: string;
  /** DNS for deliveries (tests point it at a local DNS server). */
  resolve?: Resolve;
}

/** The event columns an attempt needs. */
type AttemptEvent = Pick<
  WebhookEventRow,
  | "id"
  | "merchant_id"
  | "environment"
  | "transaction_id"
  | "url_override"
  | "body"
  | "attempts"
  | "auto_attempts"
  | "is_test"
  | "delivery_status"
>;

/** The endpoint columns an attempt needs (URL and sealed secrets). */
type AttemptEndpoint = Pick<
  WebhookEndpointRow,
  | "merchant_id"
  | "environment"
  | "url"
  | "secret_sealed"
  | "previous_secret_sealed"
  | "previous_secret_expires_at"
>;

interface Claimed {
  event: AttemptEvent;
  token: string;
  /** From the claim statement; absent (or without a secret) = read, and generate, on attempt. */
  endpoint?: AttemptEndpoint | undefined;
}

/** A claim row: the event's columns plus its endpoint's (`ep_*`, null when there is no row). */
interface ClaimRow extends AttemptEvent {
  ep_url: string | null;
  ep_secret_sealed: string | null;
  ep_previous_secret_sealed: string | null;
  ep_previous_secret_expires_at: Date | null;
}

/** Opened secrets of one endpoint state (keyed by its ciphertexts, so a rotation misses the cache). */
interface OpenedSecrets {
  /** Signs with the current secret only. */
  current: AttemptSigner;
  /** Signs with the current and the previous secret (during the rotation grace), if any. */
  both: AttemptSigner | undefined;
}
const SECRET_CACHE_LIMIT = 10_000;
const TARGET_CACHE_LIMIT = 10_000;
/** Finished attempts waiting to be written beyond which no new attempt starts. */
const RECORD_BACKLOG_FACTOR = 4;
/** Results per write statement at most. */
const RECORD_BATCH_MAX = 512;

export interface AttemptOutcome {
  ok: boolean;
  responseStatus: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
  url: string | null;
}

export class WebhookDelivery {
  readonly #db: Db;
  readonly #box: SecretBox;
  readonly #log: Logger;
  readonly #schedule: readonly number[];
  readonly #timeoutMs: number;
  readonly #leaseMs: number;
  readonly #concurrency: number;
  readonly #claimBatch: number;
  readonly #workerId: string;
  readonly #agent: Agent;
  readonly #secrets = new Map<string, OpenedSecrets>();
  readonly #targets = new Map<string, { origin: string; path: string }>();
  /** Set by `notify()`; a drain that ran out of due events claims again when it is set. */
  #woken = false;
  /** The running drain's hook for `notify()`. */
  #onWake: (() => void) | undefined;
  /** The idle `run` loop's sleep, which `notify()` ends outside a drain. */
  readonly #idle = new Wakeup();

  constructor(options: DeliveryOptions) {
    this.#db = options.db;
    this.#box = options.box;
    this.#log = options.logger;
    this.#schedule = options.retryScheduleMs;
    this.#timeoutMs = options.timeoutMs;
    this.#leaseMs = options.leaseMs ?? options.timeoutMs + 5_000;
    this.#concurrency = options.concurrency ?? 64;
    this.#claimBatch = Math.min(256, options.claimBatch ?? 2 * this.#concurrency);
    this.#workerId = options.workerId ?? `pid-${process.pid}`;
    this.#agent = createGuardedAgent({
      policy: ssrfPolicy(options.ssrfAllowCidrs, options.resolve ?? systemResolve, options.allowedPorts),
      connectTimeoutMs: options.timeoutMs,
      // One connection per attempt in flight to a receiver (no pipelining: a slow answer must
      // not hold up the others behind it on the same connection).
      connections: Math.max(this.#concurrency, 16),
    });
  }

  get leaseMs(): number {
    return this.#leaseMs;
  }

  /** The end of a lease taken now (database clock). */
  #leaseEnd() {
    return sql<Date>`now() + ${this.#leaseMs}::double precision * interval '1 millisecond'`;
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  /**
   * Claims up to `limit` due events (pending, `next_attempt_at` passed, not leased), with their
   * endpoint's URL and sealed secrets, in one statement — prepared once per connection (limit and
   * lease are literals: a worker's values never change, and a literal LIMIT keeps the plan exact).
   */
  async claimDue(limit: number): Promise<Claimed[]> {
    const token = `${this.#workerId}:${randomBytes(6).toString("hex")}`;
    const { rows } = await sql<ClaimRow>`
      with due as (
        select event_id from webhook_due
        where next_attempt_at <= now() and (locked_until is null or locked_until < now())
        order by next_attempt_at
        limit ${sql.lit(limit)}
        for update skip locked
      ), claimed as (
        update webhook_due d
        set locked_by = ${token},
            locked_until = now() + ${sql.lit(this.#leaseMs)}::double precision * interval '1 millisecond'
        from due
        where d.event_id = due.event_id
        returning d.event_id, d.next_attempt_at
      )
      select e.id, e.merchant_id, e.environment, e.transaction_id, e.url_override, e.body, e.attempts,
             e.auto_attempts, e.is_test, e.delivery_status,
             w.url as ep_url, w.secret_sealed as ep_secret_sealed,
             w.previous_secret_sealed as ep_previous_secret_sealed,
             w.previous_secret_expires_at as ep_previous_secret_expires_at
      from claimed c
      join webhook_events e on e.id = c.event_id
      left join webhook_endpoints w on w.merchant_id = e.merchant_id and w.environment = e.environment
      order by c.next_attempt_at ${PREPARED}`.execute(this.#db);
    return rows.map(
      ({ ep_url, ep_secret_sealed, ep_previous_secret_sealed, ep_previous_secret_expires_at, ...event }) => ({
        event,
        token,
        endpoint: ep_secret_sealed
          ? {
              merchant_id: event.merchant_id,
              environment: event.environment,
              url: ep_url,
              secret_sealed: ep_secret_sealed,
              previous_secret_sealed: ep_previous_secret_sealed,
              previous_secret_expires_at: ep_previous_secret_expires_at,
            }
          : undefined,
      }),
    );
  }

  /**
   * Milliseconds until the earliest unleased queued event is due (0 if one already is; Infinity
   * if none is queued): an idle worker sleeps that long instead of polling on a short interval.
   */
  async msUntilNextDue(): Promise<number> {
    const { rows } = await sql<{ ms: number | null }>`
      select (extract(epoch from (min(next_attempt_at) - now())) * 1000)::float8 as ms
      from webhook_due where locked_until is null ${PREPARED}`.execute(this.#db);
    const ms = rows[0]?.ms;
    // No row: min() is null (nothing queued, sleep the whole poll).
    return ms === null || ms === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.ceil(Number(ms)));
  }

  /**
   * Wakes the worker: a running drain claims again even if it had run out of due events; an idle
   * `run` loop starts a drain at once. Called on each NOTIFY from the outbox.
   */
  notify(): void {
    this.#woken = true;
    if (this.#onWake) this.#onWake();
    else this.#idle.notify();
  }

  /**
   * Delivers until `signal` aborts: drains, then sleeps until the next retry comes due, `notify()`
   * or `pollMs`, whichever comes first. New events wake it through `notify()`; the poll covers
   * lost notifications and leases of dead workers running out.
   */
  async run(signal: AbortSignal, pollMs: number): Promise<void> {
    while (!signal.aborted) {
      let sleepMs = pollMs;
      try {
        await this.drain(signal);
        if (!signal.aborted && !this.#woken) sleepMs = Math.min(pollMs, await this.msUntilNextDue());
      } catch (err) {
        this.#log[retriedFailureLevel(err)]({ err }, "webhook delivery failed; retrying at the next poll");
      }
      if (signal.aborted || this.#woken) continue;
      await this.#idle.wait(sleepMs, signal);
    }
  }

  /**
   * Delivers everything due, `concurrency` attempts in flight, until nothing is due (and no
   * `notify()` came meanwhile) or `signal` aborts: then the attempts in flight finish, events
   * claimed but not started are released, and results are written before it returns. Returns the
   * number of attempts made.
   */
  drain(signal?: AbortSignal): Promise<number> {
    const C = this.#concurrency;
    const batch = this.#claimBatch;
    let attempts = 0;
    let inflight = 0;
    let buffer: Claimed[] = [];
    let claiming = false;
    let exhausted = false;
    let finishing = false;
    return new Promise<number>((resolve) => {
      const finish = () => {
        if (finishing) return;
        finishing = true;
        this.#onWake = undefined;
        signal?.removeEventListener("abort", pump);
        const leftover = buffer;
        buffer = [];
        void this.#release(leftover)
          .then(() => this.#recordsWritten())
          .then(() => resolve(attempts));
      };
      const pump = (): void => {
        if (finishing) return;
        const aborted = signal?.aborted ?? false;
        const backlogLimit = C * RECORD_BACKLOG_FACTOR;
        while (!aborted && inflight < C && buffer.length > 0 && this.#queue.length < backlogLimit) {
          const c = buffer.shift() as Claimed;
          inflight++;
          attempts++;
          this.#attempt(c, { manual: false })
            .catch((err: unknown) =>
              this.#log.error({ err, webhookEventId: c.event.id }, "webhook attempt failed"),
            )
            .finally(() => {
              inflight--;
              pump();
            });
        }
        // Prefetch: the next batch is claimed while this one is in flight.
        if (!aborted && !claiming && !exhausted && buffer.length < batch / 2) {
          claiming = true;
          this.#woken = false;
          this.claimDue(batch).then(
            (rows) => {
              claiming = false;
              buffer.push(...rows);
              if (rows.length < batch && !this.#woken) exhausted = true;
              pump();
            },
            (err: unknown) => {
              claiming = false;
              exhausted = true;
              this.#log[retriedFailureLevel(err)]({ err }, "webhook claim failed");
              pump();
            },
          );
        }
        if (inflight === 0 && !claiming && (aborted || (exhausted && buffer.length === 0))) finish();
        else if (buffer.length > 0 && inflight < C && this.#queue.length >= backlogLimit) {
          // Waiting for the results to be written: resumed by the write's completion.
          this.#afterWrite.add(pump);
        }
      };
      this.#onWake = () => {
        exhausted = false;
        pump();
      };
      signal?.addEventListener("abort", pump);
      pump();
    });
  }

  /** Gives back leases of claimed events that were never attempted (due again at once). */
  async #release(claimed: Claimed[]): Promise<void> {
    if (claimed.length === 0) return;
    const rows = JSON.stringify(claimed.map((c) => ({ id: c.event.id, token: c.token })));
    await sql`
      update webhook_due d
      set locked_by = null, locked_until = null
      from json_to_recordset(${rows}::json) as r(id text, token text)
      where d.event_id = r.id and d.locked_by = r.token`
      .execute(this.#db)
      .catch((err: unknown) => this.#log.warn({ err }, "could not release webhook leases; they expire"));
  }

  /**
   * Manual retry (CONTRACT §5): one attempt now, whatever the status. Refused (409) while another
   * attempt of the event holds its lease. Returns the event after the attempt.
   */
  async retryNow(merchantId: string, environment: Environment, eventId: string): Promise<WebhookEventRow> {
    const token = `${this.#workerId}:manual:${randomBytes(6).toString("hex")}`;
    const leaseEnd = this.#leaseEnd();
    const free = sql<boolean>`(locked_until is null or locked_until < now())`;
    const ours = this.#db
      .selectFrom("webhook_events")
      .where("id", "=", eventId)
      .where("merchant_id", "=", merchantId)
      .where("environment", "=", environment);
    if (!(await ours.select("id").executeTakeFirst())) throw AppError.notFound("Webhook event not found.");
    // A pending event's lease is its queue row's; only its holder can end the pending state, so
    // the event stays pending while we hold it. No queue row: delivered or failed (for good), and
    // the lease is the event row's own.
    const queued = await this.#db
      .updateTable("webhook_due")
      .set({ locked_by: token, locked_until: leaseEnd })
      .where("event_id", "=", eventId)
      .where(free)
      .returning("event_id")
      .executeTakeFirst();
    const claimed = queued
      ? await ours.selectAll().executeTakeFirstOrThrow()
      : await this.#db
          .updateTable("webhook_events")
          .set({ locked_by: token, locked_until: leaseEnd })
          .where("id", "=", eventId)
          .where("delivery_status", "<>", "pending")
          .where(free)
          .returningAll()
          .executeTakeFirst();
    if (!claimed) {
      throw new AppError(
        "INVALID_STATE",
        "A delivery attempt of this event is in progress; retry in a few seconds.",
      );
    }
    await this.#attempt({ event: claimed, token }, { manual: true });
    return this.#db
      .selectFrom("webhook_events")
      .selectAll()
      .where("id", "=", eventId)
      .executeTakeFirstOrThrow();
  }

  /**
   * The test delivery (`POST /api/v1/webhook/test`): records a test event (already leased by this
   * call), makes its one attempt now (no automatic retries) and returns the event.
   */
  async sendTest(merchantId: string, environment: Environment, url: string): Promise<WebhookEventRow> {
    const token = `${this.#workerId}:test:${randomBytes(6).toString("hex")}`;
    const { transactionId, body } = testWebhookBody(merchantId, environment, new Date());
    const lease = this.#leaseEnd();
    // Leased by this call at insert: the table's trigger gives its queue row this lease (a crash
    // leaves the event to a worker at lease end).
    const event = await this.#db
      .insertInto("webhook_events")
      .values({
        id: newId("whe"),
        merchant_id: merchantId,
        environment,
        transaction_id: transactionId,
        type: "test",
        transaction_status: "test",
        is_test: true,
        url_override: null,
        url,
        body,
        next_attempt_at: lease,
        locked_by: token,
        locked_until: lease,
        last_attempt_at: null,
        last_response_status: null,
        last_error: null,
        delivered_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await this.#attempt({ event, token }, { manual: false });
    return this.#db
      .selectFrom("webhook_events")
      .selectAll()
      .where("id", "=", event.id)
      .executeTakeFirstOrThrow();
  }

  /** One attempt of a claimed event: sign, POST, record (automatic attempts: in the next batch). */
  async #attempt(
    { event, token, endpoint: claimedEndpoint }: Claimed,
    options: { manual: boolean },
  ): Promise<AttemptOutcome> {
    const endpoint =
      claimedEndpoint ?? (await ensureEndpoint(this.#db, this.#box, event.merchant_id, event.environment));
    const url = event.url_override ?? endpoint.url;
    const startedAt = new Date();
    let outcome: AttemptOutcome;
    if (!url) {
      outcome = {
        ok: false,
        responseStatus: null,
        error: NO_URL_ERROR,
        latencyMs: 0,
        responseBody: null,
        url: null,
      };
    } else {
      // The body's UTF-8 bytes once: both signatures and the request use the same buffer.
      const bytes = Buffer.from(event.body, "utf8");
      const headers = deliveryHeaders({ transactionId: event.transaction_id, isTest: event.is_test });
      this.#signer(endpoint, startedAt).addHeaders(
        headers,
        event.id,
        Math.floor(startedAt.getTime() / 1000),
        bytes,
      );
      outcome = await this.post(url, bytes, headers);
    }
    const record = this.#result(event, token, startedAt, outcome, options.manual);
    if (options.manual || event.is_test) await this.#writeRecords([record]);
    else this.#record(record);
    return outcome;
  }

  /**
   * The signer of an attempt: the current secret, plus the previous one until it expires. The
   * opened secrets and their imported HMAC keys are kept in memory, keyed by the ciphertexts:
   * decrypted once per endpoint state instead of once per attempt; a rotation changes the
   * ciphertexts, so it is seen at once, and the expiry is read from the row on every attempt.
   */
  #signer(endpoint: AttemptEndpoint, now: Date): AttemptSigner {
    const key = endpoint.previous_secret_sealed
      ? `${endpoint.secret_sealed}|${endpoint.previous_secret_sealed}`
      : (endpoint.secret_sealed ?? "");
    let opened = this.#secrets.get(key);
    if (!opened) {
      // Both opened whatever the expiry (epoch); the row's expiry is checked on every attempt.
      const { current, previous } = openSecrets(this.#box, endpoint as WebhookEndpointRow, new Date(0));
      opened = {
        current: new AttemptSigner([current]),
        both: previous ? new AttemptSigner([current, previous]) : undefined,
      };
      if (this.#secrets.size >= SECRET_CACHE_LIMIT) this.#secrets.clear();
      this.#secrets.set(key, opened);
    }
    const expires = endpoint.previous_secret_expires_at;
    return opened.both && expires && expires > now ? opened.both : opened.current;
  }

  /**
   * One POST with the SSRF-guarded dispatcher: no redirects, no proxy, `WEBHOOK_TIMEOUT_MS` overall.
   *
   * Written on undici's dispatch-handler API rather than `request()`: the answer is at most read up
   * to `RESPONSE_READ_LIMIT` and kept up to 1 KB, which needs no Readable stream, async iterator or
   * AbortSignal per attempt — together about a tenth of a worker's CPU per delivery. The overall
   * deadline is one timer that aborts through the request's controller.
   */
  post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<AttemptOutcome> {
    const started = performance.now();
    const timeoutMs = this.#timeoutMs;
    return new Promise<AttemptOutcome>((resolve) => {
      let settled = false;
      let controller: Dispatcher.DispatchController | undefined;
      let status = 0;
      let location: string | undefined;
      let truncated = false;
      const chunks: Buffer[] = [];
      let kept = 0;
      let read = 0;
      const settle = (o: Omit<AttemptOutcome, "latencyMs" | "url">) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...o, url, latencyMs: Math.round(performance.now() - started) });
      };
      const fail = (err: unknown) =>
        settle({ ok: false, responseStatus: null, error: describeError(err, timeoutMs), responseBody: null });
      const answered = () => {
        const responseBody = cleanText(Buffer.concat(chunks).toString("utf8"));
        if (status >= 200 && status < 300) {
          settle({ ok: true, responseStatus: status, error: null, responseBody });
          return;
        }
        const error =
          status >= 300 && status < 400
            ? `redirect (HTTP ${status}${location ? ` to ${location.slice(0, 200)}` : ""}) not followed`
            : `HTTP ${status}`;
        settle({ ok: false, responseStatus: status, error, responseBody });
      };
      const timer = setTimeout(() => {
        const err = attemptTimedOut();
        controller?.abort(err);
        fail(err);
      }, timeoutMs);
      let target: { origin: string; path: string };
      try {
        target = this.#target(url);
      } catch (err) {
        fail(err);
        return;
      }
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(c) {
          controller = c;
          if (settled) c.abort(attemptTimedOut()); // the deadline passed while it waited for a connection
        },
        onResponseStart(_c, statusCode, resHeaders) {
          status = statusCode;
          const l = resHeaders.location;
          location = l === undefined ? undefined : String(l);
        },
        onResponseData(c, chunk) {
          read += chunk.length;
          if (kept < RESPONSE_BODY_LIMIT) {
            chunks.push(chunk.subarray(0, RESPONSE_BODY_LIMIT - kept));
            kept += Math.min(chunk.length, RESPONSE_BODY_LIMIT - kept);
          }
          if (read > RESPONSE_READ_LIMIT && !truncated) {
            // Enough read: the status and the first 1 KB are what is recorded; drop the rest.
            truncated = true;
            c.abort(new Error("answer longer than the read limit"));
          }
        },
        onResponseEnd() {
          answered();
        },
        onResponseError(_c, err) {
          if (truncated) answered();
          else fail(err);
        },
      };
      try {
        this.#agent.dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: "POST",
            headers,
            body,
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
          },
          handler,
        );
      } catch (err) {
        fail(err);
      }
    });
  }

  /** Origin and path of a URL, parsed once per distinct URL (a worker sends to few). */
  #target(url: string): { origin: string; path: string } {
    let t = this.#targets.get(url);
    if (!t) {
      const u = new URL(url);
      t = { origin: u.origin, path: `${u.pathname}${u.search}` };
      if (this.#targets.size >= TARGET_CACHE_LIMIT) this.#targets.clear();
      this.#targets.set(url, t);
    }
    return t;
  }

  /** The new state of an event after an attempt (the schedule decides). */
  #result(
    event: AttemptEvent,
    token: string,
    startedAt: Date,
    o: AttemptOutcome,
    manual: boolean,
  ): AttemptRecord {
    const autoAttempts = manual ? event.auto_attempts : event.auto_attempts + 1;
    let status: "pending" | "delivered" | "failed";
    let delayMs: number | null = null;
    if (o.ok) status = "delivered";
    else if (manual) status = event.delivery_status;
    else if (!event.is_test && autoAttempts <= this.#schedule.length) {
      status = "pending";
      delayMs = this.#schedule[autoAttempts - 1] as number;
    } else status = "failed";
    return {
      id: event.id,
      token,
      status,
      autoAttempts,
      delayMs,
      attemptNumber: event.attempts + 1,
      manual,
      startedAt,
      outcome: o,
    };
  }

  /**
   * Results of automatic attempts are written by a group commit: a write starts as soon as one is
   * due and none is running (or a second when 64 are waiting), and takes everything queued. Under
   * load a worker spends one round trip per batch, not per attempt; idle, a result is written at once.
   */
  #record(r: AttemptRecord): void {
    this.#queue.push(r);
    this.#kickWrites();
  }

  readonly #queue: AttemptRecord[] = [];
  #writing = 0;
  /** Called after each write (a drain held back by the result backlog; `#recordsWritten` waiters). */
  readonly #afterWrite = new Set<() => void>();

  #kickWrites(): void {
    while (
      this.#queue.length > 0 &&
      (this.#writing === 0 || (this.#writing === 1 && this.#queue.length >= 64))
    ) {
      const batch = this.#queue.splice(0, RECORD_BATCH_MAX);
      this.#writing++;
      this.#writeRecords(batch)
        .catch(async (err: unknown) => {
          // One more try; if it fails too the events stay leased and are attempted again when the
          // lease ends (at-least-once), and the attempt rows are missing.
          await new Promise((r) => setTimeout(r, 200));
          await this.#writeRecords(batch).catch((again: unknown) =>
            this.#log.error(
              { err: again, firstError: err, webhookEventIds: batch.map((b) => b.id) },
              "could not record webhook attempts; the events are retried when their lease ends",
            ),
          );
        })
        .finally(() => {
          this.#writing--;
          this.#kickWrites();
          const waiting = [...this.#afterWrite];
          this.#afterWrite.clear();
          for (const f of waiting) f();
        });
    }
  }

  /** Resolves once every result queued so far is written. */
  async #recordsWritten(): Promise<void> {
    while (this.#queue.length > 0 || this.#writing > 0) {
      await new Promise<void>((resolve) => this.#afterWrite.add(resolve));
    }
  }

  /**
   * Writes attempt rows and the events' new states in one statement, each event only while our
   * claim token still holds it: the queue row of a pending event (deleted when the event is
   * delivered or failed, else moved to its next retry), or the event row of a manual retry of a
   * delivered or failed one. The event update touches no indexed column (a HOT update where the
   * page has room). A manual failure keeps a pending event's automatic schedule.
   * The batch travels as one JSON parameter: the statement text is the same for every batch size,
   * so it is prepared once per connection (planning it was most of PostgreSQL's work per write).
   */
  async #writeRecords(records: AttemptRecord[]): Promise<void> {
    const input = JSON.stringify(
      records.map((r) => ({
        id: r.id,
        token: r.token,
        status: r.status,
        auto_attempts: r.autoAttempts,
        delay_ms: r.delayMs,
        attempt_number: r.attemptNumber,
        manual: r.manual,
        started_at: r.startedAt.toISOString(),
        response_status: r.outcome.responseStatus,
        error: r.outcome.error,
        url: r.outcome.url,
        ok: r.outcome.ok,
        latency_ms: r.outcome.latencyMs,
        response_body: r.outcome.responseBody,
      })),
    );
    const { rows: updated } = await sql<{ id: string }>`
      with input as (
        select * from json_to_recordset(${input}::json) as i(
          id text, token text, status text, auto_attempts int, delay_ms double precision,
          attempt_number int, manual boolean, started_at timestamptz, response_status int, error text,
          url text, ok boolean, latency_ms int, response_body text)
      ), done as (
        delete from webhook_due d
        using input i
        where d.event_id = i.id and d.locked_by = i.token and i.status <> 'pending'
        returning i.*, null::timestamptz as next_at, true as queued
      ), again as (
        update webhook_due d
        set next_attempt_at = case
              when i.delay_ms is not null then now() + i.delay_ms * interval '1 millisecond'
              else d.next_attempt_at end,
            locked_by = null,
            locked_until = null
        from input i
        where d.event_id = i.id and d.locked_by = i.token and i.status = 'pending'
        returning i.*, d.next_attempt_at as next_at, true as queued
      ), held as (
        -- The results whose claim still holds its event: by the queue row (a pending event), or by
        -- the event row (a manual retry of a delivered or failed one; re-checked by the update).
        -- Each row carries its input, so the update below needs no second join with the input.
        select * from done
        union all
        select * from again
        union all
        select i.*, null::timestamptz, false
        from input i join webhook_events e on e.id = i.id
        where i.manual and e.locked_by = i.token
      ), upd as (
        update webhook_events e
        set delivery_status = h.status,
            attempts = e.attempts + 1,
            auto_attempts = h.auto_attempts,
            next_attempt_at = h.next_at,
            locked_by = null,
            locked_until = null,
            last_attempt_at = h.started_at,
            last_response_status = h.response_status,
            last_error = h.error,
            url = coalesce(h.url, e.url),
            delivered_at = case when h.ok then now() else e.delivered_at end,
            updated_at = now()
        from held h
        where e.id = h.id and (h.queued or e.locked_by = h.token)
        returning e.id
      ), ins as (
        insert into webhook_attempts
          (event_id, attempt_number, manual, started_at, url, response_status, latency_ms, error, response_body, worker)
        select id, attempt_number, manual, started_at, url, response_status, latency_ms, error, response_body,
               ${this.#workerId}::text
        from input
        returning 1
      )
      select id from upd ${PREPARED}`.execute(this.#db);
    if (updated.length < records.length) {
      const done = new Set(updated.map((u) => u.id));
      for (const r of records) {
        if (!done.has(r.id)) {
          this.#log.warn(
            { webhookEventId: r.id },
            "webhook attempt finished after its lease was lost; another attempt owns the event",
          );
        }
      }
    }
  }
}

interface AttemptRecord {
  id: string;
  token: string;
  status: "pending" | "delivered" | "failed";
  autoAttempts: number;
  delayMs: number | null;
  attemptNumber: number;
  manual: boolean;
  startedAt: Date;
  outcome: AttemptOutcome;
}

/** The error of an attempt past its deadline (made only when one is: an Error captures a stack). */
function attemptTimedOut(): Error {
  return Object.assign(new Error("attempt timed out"), { name: "TimeoutError" });
}

function cleanText(s: string): string {
  // PostgreSQL text cannot hold NUL.
  return s.replaceAll(String.fromCharCode(0), "\uFFFD");
}

function describeError(err: unknown, timeoutMs: number): string {
  if (err instanceof SsrfBlockedError) return `blocked: ${err.message}`;
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e.cause instanceof SsrfBlockedError) return `blocked: ${e.cause.message}`;
  if (
    e.name === "TimeoutError" ||
    e.code === "UND_ERR_HEADERS_TIMEOUT" ||
    e.code === "UND_ERR_BODY_TIMEOUT" ||
    e.code === "UND_ERR_CONNECT_TIMEOUT"
  ) {
    return `timeout: no complete answer within ${timeoutMs} ms`;
  }
  const message = e.message ?? String(err);
  return cleanText(e.code ? `${e.code}: ${message}` : message).slice(0, 500);
}
