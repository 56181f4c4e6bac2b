import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import { newId } from "../domain/ids.js";
import { serializeWebhookBody, type TransactionType, webhookMessage } from "./payload.js";

export const NO_URL_ERROR =
  "No webhook URL is configured for this environment; set one, then retry the event.";

export interface EnqueueWebhookInput {
  merchantId: string;
  environment: Environment;
  transactionId: string;
  type: TransactionType;
  transactionStatus: string;
  /** The SPEC §2.2 transaction object, already formatted for JSON. */
  data: Record<string, unknown>;
  /** Per-event destination (a checkout session's callbackUrl); else the environment's webhookUrl. */
  url?: string | null;
}

/**
 * The transactional outbox (CONTRACT §5): writes the webhook event in the CALLER's transaction,
 * so the event exists if and only if the status change commits. Delivery happens later, from the
 * worker (`delivery.ts`). The body is serialised here, once: every attempt sends the same bytes.
 * Without a destination URL the event is recorded as `failed` so that a manual retry can deliver
 * it once a URL is set.
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
  );
  let url = input.url ?? null;
  if (!url) {
    const endpoint = await trx
      .selectFrom("webhook_endpoints")
      .select("url")
      .where("merchant_id", "=", input.merchantId)
      .where("environment", "=", input.environment)
      .executeTakeFirst();
    url = endpoint?.url ?? null;
  }
  await trx
    .insertInto("webhook_events")
    .values({
      id,
      merchant_id: input.merchantId,
      environment: input.environment,
      transaction_id: input.transactionId,
      type: input.type,
      transaction_status: input.transactionStatus,
      url_override: input.url ?? null,
      url,
      body,
      delivery_status: url ? "pending" : "failed",
      next_attempt_at: url ? sql<Date>`now()` : null,
      last_error: url ? null : NO_URL_ERROR,
      locked_by: null,
      locked_until: null,
      last_attempt_at: null,
      last_response_status: null,
      delivered_at: null,
    })
    .execute();
  return { webhookEventId: id };
}
