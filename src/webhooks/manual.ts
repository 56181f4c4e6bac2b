import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Db } from "../db/database.js";
import type { WebhookEventRow } from "../db/tables/webhooks.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import { SecretBox } from "../lib/secret-box.js";
import { Attempts } from "./attempt.js";
import { testWebhookBody } from "./payload.js";
import { DeliveryQueue } from "./queue.js";
import { ResultWriter } from "./result-writer.js";
import { ensureEndpoint } from "./secrets.js";
import { WebhookTransport } from "./transport.js";

/**
 * The attempts a merchant asks for (docs/merchants/webhooks.md#answer-fast-process-later), made at once in the API process: a manual retry
 * (`POST /api/v1/webhook/retry/:id`) and the test send (`POST /api/v1/webhook/test`). Their results
 * are written at once, not by the worker's group commit. Built once per process (`runtime.ts`), on
 * the process's one transport.
 */

export interface ManualDeliveryOptions {
  db: Db;
  box: SecretBox;
  logger: Logger;
  transport: WebhookTransport;
  retryScheduleMs: readonly number[];
  /** Name recorded with each attempt (the process). */
  workerId: string;
  /** How long an attempt holds its event (default: the transport's timeout + 5 s). */
  leaseMs?: number | undefined;
}

export class ManualDelivery {
  readonly #db: Db;
  readonly #box: SecretBox;
  readonly #workerId: string;
  readonly #queue: DeliveryQueue;
  readonly #attempts: Attempts;

  constructor(options: ManualDeliveryOptions) {
    this.#db = options.db;
    this.#box = options.box;
    this.#workerId = options.workerId;
    const leaseMs = options.leaseMs ?? options.transport.timeoutMs + 5_000;
    const { db, logger, workerId } = options;
    this.#queue = new DeliveryQueue({ db, logger, workerId, leaseMs });
    this.#attempts = new Attempts({
      db,
      box: options.box,
      transport: options.transport,
      writer: new ResultWriter({ db, logger, workerId }),
      retryScheduleMs: options.retryScheduleMs,
    });
  }

  /**
   * Manual retry (docs/merchants/webhooks.md#answer-fast-process-later): one attempt now, whatever the status. Refused (409) while another
   * attempt of the event holds its lease. Returns the event after the attempt.
   */
  async retryNow(merchantId: string, environment: Environment, eventId: string): Promise<WebhookEventRow> {
    const token = `${this.#workerId}:manual:${randomBytes(6).toString("hex")}`;
    const leaseEnd = this.#queue.leaseEnd();
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
    await this.#attempts.attempt({ event: claimed, token }, { manual: true });
    return this.#db
      .selectFrom("webhook_events")
      .selectAll()
      .where("id", "=", eventId)
      .executeTakeFirstOrThrow();
  }

  /**
   * The test delivery to the endpoint's URL (`POST /api/v1/webhook/test`); refused (409) when the
   * environment has no URL. Returns the test event after its attempt.
   */
  async testEndpoint(merchantId: string, environment: Environment): Promise<WebhookEventRow> {
    const endpoint = await ensureEndpoint(this.#db, this.#box, merchantId, environment);
    if (!endpoint.url) throw new AppError("INVALID_STATE", "No webhook URL is set for this environment.");
    return this.sendTest(merchantId, environment, endpoint.url);
  }

  /**
   * The test delivery (`POST /api/v1/webhook/test`): records a test event (already leased by this
   * call), makes its one attempt now (no automatic retries) and returns the event.
   */
  async sendTest(merchantId: string, environment: Environment, url: string): Promise<WebhookEventRow> {
    const token = `${this.#workerId}:test:${randomBytes(6).toString("hex")}`;
    const { transactionId, body } = testWebhookBody(merchantId, environment, new Date());
    const lease = this.#queue.leaseEnd();
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
    await this.#attempts.attempt({ event, token }, { manual: false });
    return this.#db
      .selectFrom("webhook_events")
      .selectAll()
      .where("id", "=", event.id)
      .executeTakeFirstOrThrow();
  }
}

/**
 * The webhook sending of a process, built once (`runtime.ts`): the one transport (which the
 * delivery job shares) and the manual sender of the HTTP routes on it. Attempts are recorded as
 * made by `api-<pid>`.
 */
export function createWebhookSending(
  webhooks: Config["webhooks"],
  deps: { db: Db; logger: Logger; secretEncryptionKey: string },
): { transport: WebhookTransport; manual: ManualDelivery } {
  const transport = new WebhookTransport({
    timeoutMs: webhooks.timeoutMs,
    ssrfAllowCidrs: webhooks.ssrfAllowCidrs,
    allowedPorts: webhooks.allowedPorts,
  });
  const manual = new ManualDelivery({
    db: deps.db,
    box: new SecretBox(deps.secretEncryptionKey),
    logger: deps.logger,
    transport,
    retryScheduleMs: webhooks.retryScheduleSeconds.map((s) => Math.round(s * 1000)),
    workerId: `api-${process.pid}`,
  });
  return { transport, manual };
}
