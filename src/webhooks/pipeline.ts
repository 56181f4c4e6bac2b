import type { Logger } from "pino";
import { retriedFailureLevel } from "../db/transient.js";
import type { Attempts } from "./attempt.js";
import type { Claimed, DeliveryQueue } from "./queue.js";
import type { ResultWriter } from "./result-writer.js";

/**
 * The delivery loop of a worker (docs/merchants/webhooks.md#answer-fast-process-later): claims come in batches (one statement also returns
 * each event's endpoint URL and sealed secrets), a batch is prefetched while the previous one is in
 * flight so the HTTP slots never wait for the database, a slot is freed as soon as its answer is
 * read, and results are written by a group commit (`result-writer.ts`: one statement per batch of
 * finished attempts, the next batch forming while the previous one is written). The job
 * (`job.ts`) runs `round` in the notified loop: drain, then sleep until the next retry comes due,
 * a NOTIFY from the outbox (sent at commit) or the poll interval, whichever comes first.
 */

/** Finished attempts waiting to be written beyond which no new attempt starts. */
const RECORD_BACKLOG_FACTOR = 4;

export interface PipelineOptions {
  queue: DeliveryQueue;
  writer: ResultWriter;
  attempts: Attempts;
  logger: Logger;
  /** Attempts in flight (default 64). */
  concurrency?: number | undefined;
  /**
   * Events per claim statement (default: twice the concurrency, at most 256). The next claim is
   * made while half of the last one is still waiting.
   */
  claimBatch?: number | undefined;
}

export class DeliveryPipeline {
  readonly #queue: DeliveryQueue;
  readonly #writer: ResultWriter;
  readonly #attempts: Attempts;
  readonly #log: Logger;
  readonly #concurrency: number;
  readonly #claimBatch: number;
  /** Set by `notify()`; a drain that ran out of due events claims again when it is set. */
  #woken = false;
  /** The running drain's hook for `notify()`. */
  #onWake: (() => void) | undefined;

  constructor(options: PipelineOptions) {
    this.#queue = options.queue;
    this.#writer = options.writer;
    this.#attempts = options.attempts;
    this.#log = options.logger;
    this.#concurrency = options.concurrency ?? 64;
    this.#claimBatch = Math.min(256, options.claimBatch ?? 2 * this.#concurrency);
  }

  /**
   * Wakes the worker: a running drain claims again even if it had run out of due events. Returns
   * whether a drain was running (if not, the caller ends the idle sleep). Called on each NOTIFY
   * from the outbox.
   */
  notify(): boolean {
    this.#woken = true;
    if (!this.#onWake) return false;
    this.#onWake();
    return true;
  }

  /**
   * One round of the delivery loop: drains, then returns how long to sleep — until the next retry
   * comes due or `pollMs`, whichever comes first; not at all if `notify()` came meanwhile. New
   * events end the sleep through `notify()`; the poll covers lost notifications and leases of dead
   * workers running out.
   */
  async round(signal: AbortSignal, pollMs: number): Promise<number> {
    let sleepMs = pollMs;
    try {
      await this.drain(signal);
      if (!signal.aborted && !this.#woken) sleepMs = Math.min(pollMs, await this.#queue.msUntilNextDue());
    } catch (err) {
      this.#log[retriedFailureLevel(err)]({ err }, "webhook delivery failed; retrying at the next poll");
    }
    return signal.aborted || this.#woken ? 0 : sleepMs;
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
        void this.#queue
          .release(leftover)
          .then(() => this.#writer.recordsWritten())
          .then(() => resolve(attempts));
      };
      const pump = (): void => {
        if (finishing) return;
        const aborted = signal?.aborted ?? false;
        const backlogLimit = C * RECORD_BACKLOG_FACTOR;
        while (!aborted && inflight < C && buffer.length > 0 && this.#writer.backlog < backlogLimit) {
          const c = buffer.shift() as Claimed;
          inflight++;
          attempts++;
          this.#attempts
            .attempt(c, { manual: false })
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
          this.#queue.claimDue(batch).then(
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
        else if (buffer.length > 0 && inflight < C && this.#writer.backlog >= backlogLimit) {
          // Waiting for the results to be written: resumed by the write's completion.
          this.#writer.afterWrite(pump);
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
}
