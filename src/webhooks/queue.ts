import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Db } from "../db/database.js";
import { PREPARED } from "../db/prepared.js";
import type { WebhookEndpointRow, WebhookEventRow } from "../db/tables/webhooks.js";

/**
 * The delivery queue (docs/merchants/webhooks.md#answer-fast-process-later): a pending event has one row in `webhook_due` (when it is due, who
 * holds it); delivered and failed events have none. Claiming: a worker takes due rows with
 * `FOR UPDATE SKIP LOCKED` and, in the same statement, leases them: `locked_by` = a random claim
 * token, `locked_until` = now + lease. Any number of workers on any number of machines can run
 * this; each due attempt goes to one of them. A worker that dies mid-attempt leaves the row leased;
 * once `locked_until` has passed another worker re-claims it (at-least-once: the receiver may see
 * that attempt twice, with the same `webhook-id`). The lease touches no indexed column, so on the
 * narrow row's spare page room it is a HOT update. Results are written by `result-writer.ts`.
 * Time comes from the database (`now()`), the one clock all workers share.
 */

/** The event columns an attempt needs. */
export type AttemptEvent = Pick<
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
export type AttemptEndpoint = Pick<
  WebhookEndpointRow,
  | "merchant_id"
  | "environment"
  | "url"
  | "secret_sealed"
  | "previous_secret_sealed"
  | "previous_secret_expires_at"
>;

export interface Claimed {
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

export class DeliveryQueue {
  readonly #db: Db;
  readonly #log: Logger;
  readonly #workerId: string;
  readonly #leaseMs: number;

  constructor(options: { db: Db; logger: Logger; workerId: string; leaseMs: number }) {
    this.#db = options.db;
    this.#log = options.logger;
    this.#workerId = options.workerId;
    this.#leaseMs = options.leaseMs;
  }

  get leaseMs(): number {
    return this.#leaseMs;
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

  /** Gives back leases of claimed events that were never attempted (due again at once). */
  async release(claimed: Claimed[]): Promise<void> {
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

  /** The end of a lease taken now (database clock). */
  leaseEnd() {
    return sql<Date>`now() + ${this.#leaseMs}::double precision * interval '1 millisecond'`;
  }
}
