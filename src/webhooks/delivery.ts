import type { Logger } from "pino";
import type { Db } from "../db/database.js";
import type { WebhookEventRow } from "../db/tables/webhooks.js";
import type { Environment } from "../domain/environment.js";
import type { SecretBox } from "../lib/secret-box.js";
import { Attempts } from "./attempt.js";
import { ManualDelivery } from "./manual.js";
import { DeliveryPipeline } from "./pipeline.js";
import { type Claimed, DeliveryQueue } from "./queue.js";
import { ResultWriter } from "./result-writer.js";
import type { Resolve } from "./ssrf.js";
import { type AttemptOutcome, WebhookTransport } from "./transport.js";

/**
 * Delivery of webhook events (SPEC §6.5, CONTRACT §5), assembled for one worker from its parts:
 *
 * - `queue.ts`: claiming due events with `FOR UPDATE SKIP LOCKED` and a lease, releasing them;
 * - `result-writer.ts`: the group-committed writer of attempt results (only while the claim holds);
 * - `attempt.ts`: one attempt (sign, POST, record) and the retry schedule;
 * - `transport.ts`: the HTTP POST through the SSRF-guarded agent;
 * - `pipeline.ts`: the delivery loop (drain with bounded concurrency, wake-up, next-due sleep);
 * - `manual.ts`: manual retry and test send.
 */

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
  /** The process's transport (not closed by `close()`); absent: one of its own. */
  transport?: WebhookTransport;
}

export class WebhookDelivery {
  readonly #transport: WebhookTransport;
  readonly #ownsTransport: boolean;
  readonly #queue: DeliveryQueue;
  readonly #pipeline: DeliveryPipeline;
  readonly #manual: ManualDelivery;

  constructor(options: DeliveryOptions) {
    const { db, logger } = options;
    const workerId = options.workerId ?? `pid-${process.pid}`;
    const leaseMs = options.leaseMs ?? options.timeoutMs + 5_000;
    this.#ownsTransport = !options.transport;
    this.#transport =
      options.transport ??
      new WebhookTransport({
        timeoutMs: options.timeoutMs,
        ssrfAllowCidrs: options.ssrfAllowCidrs,
        allowedPorts: options.allowedPorts,
        resolve: options.resolve,
        concurrency: options.concurrency,
      });
    this.#queue = new DeliveryQueue({ db, logger, workerId, leaseMs });
    const writer = new ResultWriter({ db, logger, workerId });
    const attempts = new Attempts({
      db,
      box: options.box,
      transport: this.#transport,
      writer,
      retryScheduleMs: options.retryScheduleMs,
    });
    this.#pipeline = new DeliveryPipeline({
      queue: this.#queue,
      writer,
      attempts,
      logger,
      concurrency: options.concurrency,
      claimBatch: options.claimBatch,
    });
    this.#manual = new ManualDelivery({
      db,
      box: options.box,
      logger,
      transport: this.#transport,
      retryScheduleMs: options.retryScheduleMs,
      workerId,
      leaseMs,
    });
  }

  get leaseMs(): number {
    return this.#queue.leaseMs;
  }

  async close(): Promise<void> {
    if (this.#ownsTransport) await this.#transport.close();
  }

  /** See `DeliveryQueue.claimDue`. */
  claimDue(limit: number): Promise<Claimed[]> {
    return this.#queue.claimDue(limit);
  }

  /** See `DeliveryQueue.msUntilNextDue`. */
  msUntilNextDue(): Promise<number> {
    return this.#queue.msUntilNextDue();
  }

  /** See `DeliveryPipeline.notify`. */
  notify(): boolean {
    return this.#pipeline.notify();
  }

  /** See `DeliveryPipeline.round`. */
  round(signal: AbortSignal, pollMs: number): Promise<number> {
    return this.#pipeline.round(signal, pollMs);
  }

  /** See `DeliveryPipeline.drain`. */
  drain(signal?: AbortSignal): Promise<number> {
    return this.#pipeline.drain(signal);
  }

  /** See `ManualDelivery.retryNow`. */
  retryNow(merchantId: string, environment: Environment, eventId: string): Promise<WebhookEventRow> {
    return this.#manual.retryNow(merchantId, environment, eventId);
  }

  /** See `ManualDelivery.sendTest`. */
  sendTest(merchantId: string, environment: Environment, url: string): Promise<WebhookEventRow> {
    return this.#manual.sendTest(merchantId, environment, url);
  }

  /** See `WebhookTransport.post`. */
  post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<AttemptOutcome> {
    return this.#transport.post(url, body, headers);
  }
}
