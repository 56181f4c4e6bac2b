import type { Logger } from "pino";
import type { Db } from "../db/database.js";
import type { SecretBox } from "../lib/secret-box.js";
import { Attempts } from "./attempt.js";
import { DeliveryPipeline } from "./pipeline.js";
import { DeliveryQueue } from "./queue.js";
import { ResultWriter } from "./result-writer.js";
import type { Resolve } from "./ssrf.js";
import { WebhookTransport } from "./transport.js";

/**
 * Delivery of webhook events (docs/merchants/webhooks.md#answer-fast-process-later), assembled for one worker from its parts:
 *
 * - `queue.ts`: claiming due events with `FOR UPDATE SKIP LOCKED` and a lease, releasing them;
 * - `result-writer.ts`: the group-committed writer of attempt results (only while the claim holds);
 * - `attempt.ts`: one attempt (sign, POST, record) and the retry schedule;
 * - `transport.ts`: the HTTP POST through the SSRF-guarded agent;
 * - `pipeline.ts`: the delivery loop (drain with bounded concurrency, wake-up, next-due sleep).
 *
 * The manual retry and test send of the HTTP routes (`manual.ts`) are built once per process by
 * the runtime, on the same transport: a worker has no use for them.
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

/** One worker's delivery: the pipeline over its queue, result writer and attempts, on a transport. */
export interface WorkerDelivery {
  pipeline: DeliveryPipeline;
  transport: WebhookTransport;
  /** Closes the transport when it is the delivery's own. */
  close(): Promise<void>;
}

export function assembleDelivery(options: DeliveryOptions): WorkerDelivery {
  const { db, logger } = options;
  const workerId = options.workerId ?? `pid-${process.pid}`;
  const leaseMs = options.leaseMs ?? options.timeoutMs + 5_000;
  const transport =
    options.transport ??
    new WebhookTransport({
      timeoutMs: options.timeoutMs,
      ssrfAllowCidrs: options.ssrfAllowCidrs,
      allowedPorts: options.allowedPorts,
      resolve: options.resolve,
      concurrency: options.concurrency,
    });
  const writer = new ResultWriter({ db, logger, workerId });
  const attempts = new Attempts({
    db,
    box: options.box,
    transport,
    writer,
    retryScheduleMs: options.retryScheduleMs,
  });
  const pipeline = new DeliveryPipeline({
    queue: new DeliveryQueue({ db, logger, workerId, leaseMs }),
    writer,
    attempts,
    logger,
    concurrency: options.concurrency,
    claimBatch: options.claimBatch,
  });
  const owned = !options.transport;
  return { pipeline, transport, close: async () => (owned ? transport.close() : undefined) };
}
