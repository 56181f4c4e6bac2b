import { sql } from "kysely";
import type { Logger } from "pino";
import type { Db } from "../db/database.js";
import { PREPARED } from "../db/prepared.js";
import type { AttemptOutcome } from "./transport.js";

/**
 * The results of delivery attempts (docs/merchants/webhooks.md#answer-fast-process-later): written only while the claim token still holds the
 * event. The queue row is deleted (or moved to the next retry), the event updated in columns no
 * index covers (a HOT update too) and the attempt row inserted, in one statement. A manual retry of
 * a delivered or failed event, which has no queue row, holds the event row itself.
 */

/** Results per write statement at most. */
const RECORD_BATCH_MAX = 512;

export interface AttemptRecord {
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

export class ResultWriter {
  readonly #db: Db;
  readonly #log: Logger;
  readonly #workerId: string;

  constructor(options: { db: Db; logger: Logger; workerId: string }) {
    this.#db = options.db;
    this.#log = options.logger;
    this.#workerId = options.workerId;
  }

  /** Results waiting to be written (a drain starts no attempt beyond a backlog of them). */
  get backlog(): number {
    return this.#queue.length;
  }

  /** Calls `f` once, after the next write completes. */
  afterWrite(f: () => void): void {
    this.#afterWrite.add(f);
  }

  /**
   * Results of automatic attempts are written by a group commit: a write starts as soon as one is
   * due and none is running (or a second when 64 are waiting), and takes everything queued. Under
   * load a worker spends one round trip per batch, not per attempt; idle, a result is written at once.
   */
  record(r: AttemptRecord): void {
    this.#queue.push(r);
    this.#kickWrites();
  }

  readonly #queue: AttemptRecord[] = [];
  #writing = 0;
  /** Called after each write (a drain held back by the result backlog; `recordsWritten` waiters). */
  readonly #afterWrite = new Set<() => void>();

  #kickWrites(): void {
    while (
      this.#queue.length > 0 &&
      (this.#writing === 0 || (this.#writing === 1 && this.#queue.length >= 64))
    ) {
      const batch = this.#queue.splice(0, RECORD_BATCH_MAX);
      this.#writing++;
      this.writeRecords(batch)
        .catch(async (err: unknown) => {
          // One more try; if it fails too the events stay leased and are attempted again when the
          // lease ends (at-least-once), and the attempt rows are missing.
          await new Promise((r) => setTimeout(r, 200));
          await this.writeRecords(batch).catch((again: unknown) =>
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
  async recordsWritten(): Promise<void> {
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
  async writeRecords(records: AttemptRecord[]): Promise<void> {
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
