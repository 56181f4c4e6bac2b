import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { sql } from "kysely";
import type { Logger } from "pino";
import { type Agent, request } from "undici";
import type { Db } from "../db/database.js";
import type { WebhookEndpointRow, WebhookEventRow } from "../db/tables/webhooks.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { SecretBox } from "../lib/secret-box.js";
import { NO_URL_ERROR } from "./outbox.js";
import { testWebhookBody } from "./payload.js";
import { ensureEndpoint, openSecrets } from "./secrets.js";
import { signatureHeaders } from "./signing.js";
import { createGuardedAgent, type Resolve, SsrfBlockedError, ssrfPolicy, systemResolve } from "./ssrf.js";

/**
 * Delivery of webhook events (SPEC §6.5, CONTRACT §5).
 *
 * Claiming: a worker takes due events with `FOR UPDATE SKIP LOCKED` and, in the same statement,
 * leases them: `locked_by` = a random claim token, `locked_until` and `next_attempt_at` = now +
 * lease. Any number of workers on any number of machines can run this; each due attempt goes to
 * one of them. A worker that dies mid-attempt leaves the event pending with `next_attempt_at` at
 * the end of its lease, so another worker re-claims it then (at-least-once: the receiver may see
 * that attempt twice, with the same `webhook-id`). The result is written only while the claim
 * token still matches, together with the attempt row, in one statement.
 *
 * Schedule: attempt 1 at once; after the n-th automatic failure the next one waits
 * `WEBHOOK_RETRY_SCHEDULE[n-1]`; after the last retry fails the event is `failed`. Manual retry:
 * one attempt now whatever the status; it never consumes or reschedules the automatic series.
 * Time comes from the database (`now()`), the one clock all workers share.
 */

export const RESPONSE_BODY_LIMIT = 1024;
/** Bytes of an answer we read at most (the rest is dropped with the connection). */
const RESPONSE_READ_LIMIT = 64 * 1024;
const USER_AGENT = "stablegate-webhooks/1.0";

export interface DeliveryOptions {
  db: Db;
  box: SecretBox;
  logger: Logger;
  retryScheduleMs: readonly number[];
  timeoutMs: number;
  ssrfAllowCidrs: readonly string[];
  /** How long a claim holds an event (default: the timeout + 5 s). */
  leaseMs?: number;
  /** Attempts in flight per worker (default 64). */
  concurrency?: number;
  /** Name recorded with each attempt (the worker instance). */
  workerId?: string;
  /** DNS for deliveries (tests point it at a local DNS server). */
  resolve?: Resolve;
}

interface Claimed {
  event: WebhookEventRow;
  token: string;
}

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
  readonly #workerId: string;
  readonly #agent: Agent;

  constructor(options: DeliveryOptions) {
    this.#db = options.db;
    this.#box = options.box;
    this.#log = options.logger;
    this.#schedule = options.retryScheduleMs;
    this.#timeoutMs = options.timeoutMs;
    this.#leaseMs = options.leaseMs ?? options.timeoutMs + 5_000;
    this.#concurrency = options.concurrency ?? 64;
    this.#workerId = options.workerId ?? `pid-${process.pid}`;
    this.#agent = createGuardedAgent({
      policy: ssrfPolicy(options.ssrfAllowCidrs, options.resolve ?? systemResolve),
      connectTimeoutMs: options.timeoutMs,
      connections: 128,
    });
  }

  get leaseMs(): number {
    return this.#leaseMs;
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  /** Claims up to `limit` due events (pending, `next_attempt_at` passed, not leased). */
  async claimDue(limit: number): Promise<Claimed[]> {
    const token = `${this.#workerId}:${randomBytes(6).toString("hex")}`;
    const { rows } = await sql<WebhookEventRow>`
      with due as (
        select id from webhook_events
        where delivery_status = 'pending' and next_attempt_at <= now()
          and (locked_until is null or locked_until < now())
        order by next_attempt_at
        limit ${limit}
        for update skip locked
      )
      update webhook_events e
      set locked_by = ${token},
          locked_until = now() + ${this.#leaseMs}::double precision * interval '1 millisecond',
          next_attempt_at = now() + ${this.#leaseMs}::double precision * interval '1 millisecond'
      from due
      where e.id = due.id
      returning e.*`.execute(this.#db);
    return rows.map((event) => ({ event, token }));
  }

  /**
   * Delivers everything due, `concurrency` attempts in flight, until nothing is due or `signal`
   * aborts (then the attempts in flight finish). Returns the number of attempts made.
   */
  async drain(signal?: AbortSignal): Promise<number> {
    const inflight = new Set<Promise<void>>();
    let attempts = 0;
    const minBatch = Math.max(1, Math.floor(this.#concurrency / 4));
    while (!signal?.aborted) {
      const room = this.#concurrency - inflight.size;
      if (room < minBatch && inflight.size > 0) {
        await Promise.race(inflight);
        continue;
      }
      const claimed = await this.claimDue(room);
      const endpoints = await this.#endpoints(claimed.map((c) => c.event));
      for (const c of claimed) {
        attempts++;
        const p: Promise<void> = this.#attempt(c, { manual: false, endpoints })
          .then(() => {})
          .catch((err: unknown) =>
            this.#log.error({ err, webhookEventId: c.event.id }, "webhook attempt failed"),
          )
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      if (claimed.length === 0) {
        if (inflight.size === 0) break;
        await Promise.race(inflight);
      }
    }
    await Promise.allSettled([...inflight]);
    return attempts;
  }

  /** Endpoint rows (URL and secrets) of a batch, one query; secrets generated where missing. */
  async #endpoints(events: WebhookEventRow[]): Promise<Map<string, WebhookEndpointRow>> {
    const out = new Map<string, WebhookEndpointRow>();
    if (events.length === 0) return out;
    const merchants = [...new Set(events.map((e) => e.merchant_id))];
    const rows = await this.#db
      .selectFrom("webhook_endpoints")
      .selectAll()
      .where("merchant_id", "in", merchants)
      .execute();
    for (const r of rows) if (r.secret_sealed) out.set(`${r.merchant_id}:${r.environment}`, r);
    for (const e of events) {
      const key = `${e.merchant_id}:${e.environment}`;
      if (!out.has(key))
        out.set(key, await ensureEndpoint(this.#db, this.#box, e.merchant_id, e.environment));
    }
    return out;
  }

  /**
   * Manual retry (CONTRACT §5): one attempt now, whatever the status. Refused (409) while another
   * attempt of the event holds its lease. Returns the event after the attempt.
   */
  async retryNow(merchantId: string, environment: Environment, eventId: string): Promise<WebhookEventRow> {
    const token = `${this.#workerId}:manual:${randomBytes(6).toString("hex")}`;
    const claimed = await this.#db
      .updateTable("webhook_events")
      .set({
        locked_by: token,
        locked_until: sql<Date>`now() + ${this.#leaseMs}::double precision * interval '1 millisecond'`,
      })
      .where("id", "=", eventId)
      .where("merchant_id", "=", merchantId)
      .where("environment", "=", environment)
      .where((eb) => eb.or([eb("locked_until", "is", null), eb("locked_until", "<", sql<Date>`now()`)]))
      .returningAll()
      .executeTakeFirst();
    if (!claimed) {
      const exists = await this.#db
        .selectFrom("webhook_events")
        .select("id")
        .where("id", "=", eventId)
        .where("merchant_id", "=", merchantId)
        .where("environment", "=", environment)
        .executeTakeFirst();
      if (!exists) throw AppError.notFound("Webhook event not found.");
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
    const lease = sql<Date>`now() + ${this.#leaseMs}::double precision * interval '1 millisecond'`;
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

  /** One attempt of a claimed event: sign, POST, record. */
  async #attempt(
    { event, token }: Claimed,
    options: { manual: boolean; endpoints?: Map<string, WebhookEndpointRow> },
  ): Promise<AttemptOutcome> {
    const endpoint =
      options.endpoints?.get(`${event.merchant_id}:${event.environment}`) ??
      (await ensureEndpoint(this.#db, this.#box, event.merchant_id, event.environment));
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
      const secrets = openSecrets(this.#box, endpoint, startedAt);
      const signing = [secrets.current, ...(secrets.previous ? [secrets.previous] : [])];
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "x-webhook-source": "stablegate",
        "x-transaction-id": event.transaction_id,
        ...signatureHeaders(signing, event.id, Math.floor(startedAt.getTime() / 1000), event.body),
      };
      if (event.is_test) headers["x-webhook-test"] = "true";
      outcome = await this.post(url, event.body, headers);
    }
    await this.#record(
      this.#result(event, token, startedAt, outcome, options.manual),
      options.endpoints === undefined,
    );
    return outcome;
  }

  /** One POST with the SSRF-guarded dispatcher: no redirects, no proxy, `WEBHOOK_TIMEOUT_MS` overall. */
  async post(url: string, body: string, headers: Record<string, string>): Promise<AttemptOutcome> {
    const started = performance.now();
    const signal = AbortSignal.timeout(this.#timeoutMs);
    const done = (o: Omit<AttemptOutcome, "latencyMs" | "url">): AttemptOutcome => ({
      ...o,
      url,
      latencyMs: Math.round(performance.now() - started),
    });
    try {
      const res = await request(url, {
        method: "POST",
        dispatcher: this.#agent,
        headers,
        body,
        signal,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      const chunks: Buffer[] = [];
      let kept = 0;
      let read = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        read += chunk.length;
        if (kept < RESPONSE_BODY_LIMIT) {
          chunks.push(chunk.subarray(0, RESPONSE_BODY_LIMIT - kept));
          kept += Math.min(chunk.length, RESPONSE_BODY_LIMIT - kept);
        }
        if (read > RESPONSE_READ_LIMIT) {
          res.body.destroy();
          break;
        }
      }
      const responseBody = cleanText(Buffer.concat(chunks).toString("utf8"));
      const status = res.statusCode;
      if (status >= 200 && status < 300)
        return done({ ok: true, responseStatus: status, error: null, responseBody });
      const location = res.headers.location;
      const error =
        status >= 300 && status < 400
          ? `redirect (HTTP ${status}${location ? ` to ${String(location).slice(0, 200)}` : ""}) not followed`
          : `HTTP ${status}`;
      return done({ ok: false, responseStatus: status, error, responseBody });
    } catch (err) {
      return done({
        ok: false,
        responseStatus: null,
        error: describeError(err, this.#timeoutMs),
        responseBody: null,
      });
    }
  }

  /** The new state of an event after an attempt (the schedule decides). */
  #result(
    event: WebhookEventRow,
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
   * Results are written in batches (one statement per batch, flushed when 64 are waiting or after
   * 5 ms): under load a worker then spends one round trip per batch rather than per attempt.
   */
  #record(r: AttemptRecord, immediate: boolean): Promise<void> {
    if (immediate) return this.#writeRecords([r]);
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ record: r, resolve, reject });
      if (this.#queue.length >= 64) this.#flush();
      else this.#flushTimer ??= setTimeout(() => this.#flush(), 5);
    });
  }

  readonly #queue: { record: AttemptRecord; resolve: () => void; reject: (e: unknown) => void }[] = [];
  #flushTimer: NodeJS.Timeout | undefined;

  #flush(): void {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const batch = this.#queue.splice(0);
    if (batch.length === 0) return;
    this.#writeRecords(batch.map((b) => b.record)).then(
      () => {
        for (const b of batch) b.resolve();
      },
      (err: unknown) => {
        for (const b of batch) b.reject(err);
      },
    );
  }

  /**
   * Writes attempt rows and the events' new states in one statement, each event only while our
   * claim token still holds it. A manual failure keeps a pending event's automatic schedule.
   */
  async #writeRecords(records: AttemptRecord[]): Promise<void> {
    const rows = records.map(
      (r) => sql`(${r.id}::text, ${r.token}::text, ${r.status}::text, ${r.autoAttempts}::int,
        ${r.delayMs}::double precision, ${r.attemptNumber}::int, ${r.manual}::boolean, ${r.startedAt}::timestamptz,
        ${r.outcome.responseStatus}::int, ${r.outcome.error}::text, ${r.outcome.url}::text, ${r.outcome.ok}::boolean,
        ${r.outcome.latencyMs}::int, ${r.outcome.responseBody}::text)`,
    );
    const { rows: updated } = await sql<{ id: string }>`
      with input (id, token, status, auto_attempts, delay_ms, attempt_number, manual, started_at,
                  response_status, error, url, ok, latency_ms, response_body) as (
        values ${sql.join(rows)}
      ), upd as (
        update webhook_events e
        set delivery_status = i.status,
            attempts = e.attempts + 1,
            auto_attempts = i.auto_attempts,
            next_attempt_at = case
              when i.status <> 'pending' then null
              when i.delay_ms is not null then now() + i.delay_ms * interval '1 millisecond'
              else coalesce(e.next_attempt_at, now()) end,
            locked_by = null,
            locked_until = null,
            last_attempt_at = i.started_at,
            last_response_status = i.response_status,
            last_error = i.error,
            url = coalesce(i.url, e.url),
            delivered_at = case when i.ok then now() else e.delivered_at end,
            updated_at = now()
        from input i
        where e.id = i.id and e.locked_by = i.token
        returning e.id
      ), ins as (
        insert into webhook_attempts
          (event_id, attempt_number, manual, started_at, url, response_status, latency_ms, error, response_body, worker)
        select id, attempt_number, manual, started_at, url, response_status, latency_ms, error, response_body,
               ${this.#workerId}::text
        from input
        returning 1
      )
      select id from upd`.execute(this.#db);
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
