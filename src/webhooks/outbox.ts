import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import { newId } from "../domain/ids.js";
import type { TransactionType } from "../domain/transaction.js";
import { serializeWebhookBody, webhookMessage } from "./payload.js";

export const NO_URL_ERROR =
  "No webhook URL is configured for this environment; set one, then retry the event.";

export interface EnqueueWebhookInput {
  merchantId: string;
  environment: Environment;
  transactionId: string;
  type: TransactionType;
  transactionStatus: string;
  /** The transaction object, already formatted for JSON (`webhookData`); `environment` is added. */
  data: Record<string, unknown>;
  /** Per-event destination (a checkout session's callbackUrl); else the environment's webhookUrl. */
  url?: string | null;
}

/** NOTIFY channel of new deliverable events: sent by the enqueue, delivered at commit; workers LISTEN. */
export const WEBHOOK_CHANNEL = "stablegate_webhook_events";

/**
 * The transactional outbox (docs/decisions/webhooks.md#webhooks): writes the webhook event in the CALLER's transaction,
 * so the event exists if and only if the status change commits. Delivery happens later, from the
 * worker (`delivery.ts`). The body is serialised here, once: every attempt sends the same bytes.
 * Without a destination URL the event is recorded as `failed` so that a manual retry can deliver
 * it once a URL is set.
 *
 * One statement: the destination lookup, the insert (a pending event's row in the delivery queue
 * `webhook_due` is written by the table's trigger, migration 0010) and a `pg_notify` on
 * WEBHOOK_CHANNEL, which PostgreSQL sends when the caller's transaction commits (never for a
 * rolled-back one), so idle workers start the delivery at once instead of at their next poll.
 * Notifications of one transaction collapse into one.
 */
export async function enqueueWebhookEvent(
  trx: Db,
  input: EnqueueWebhookInput,
): Promise<{ webhookEventId: string }> {
  const id = newId("whe");
  const body = serializeWebhookBody(
    webhookMessage(input.type, input.transactionStatus),
    input.data,
    input.transactionId,
    input.environment,
  );
  const override = input.url || null;
  await sql`
    with destination as (
      select coalesce(${override}::text,
        (select url from webhook_endpoints
         where merchant_id = ${input.merchantId} and environment = ${input.environment})) as url
    ), inserted as (
      insert into webhook_events
        (id, merchant_id, environment, transaction_id, type, transaction_status, url_override, url, body,
         delivery_status, next_attempt_at, last_error)
      select ${id}, ${input.merchantId}, ${input.environment}, ${input.transactionId}, ${input.type},
             ${input.transactionStatus}, ${override}::text, d.url, ${body},
             case when d.url is null then 'failed' else 'pending' end,
             case when d.url is null then null else now() end,
             case when d.url is null then ${NO_URL_ERROR}::text end
      from destination d
      returning delivery_status
    )
    select pg_notify(${WEBHOOK_CHANNEL}, '') from inserted where delivery_status = 'pending'`.execute(trx);
  return { webhookEventId: id };
}
