import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import type { WebhookAttemptRow, WebhookEventRow } from "../db/tables/webhooks.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { ListParams } from "../domain/list.js";

/** The event log of a merchant × environment (docs/api-reference.md#listwebhookevents): `GET /api/v1/webhook/events[/:id]`. */

export type { WebhookAttemptRow, WebhookEventRow };

export interface EventFilter {
  status?: WebhookEventRow["delivery_status"] | undefined;
  transactionId?: string | undefined;
}

/** A page of the event log, newest first by default (`sortBy`: createdAt, updatedAt or status). */
export async function listEvents(
  db: Db,
  merchantId: string,
  environment: Environment,
  filter: EventFilter,
  params: Pick<ListParams, "limit" | "offset" | "sortBy" | "order">,
): Promise<{ rows: WebhookEventRow[]; total: number }> {
  let base = db
    .selectFrom("webhook_events")
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment);
  if (filter.status) base = base.where("delivery_status", "=", filter.status);
  if (filter.transactionId) base = base.where("transaction_id", "=", filter.transactionId);
  const sortColumn =
    params.sortBy === "updatedAt"
      ? "updated_at"
      : params.sortBy === "status"
        ? "delivery_status"
        : "created_at";
  return paginate(base, params, (q) =>
    q.selectAll().orderBy(sortColumn, params.order).orderBy("id", params.order),
  );
}

/** One event of the merchant × environment with every attempt, oldest first; 404 if not theirs. */
export async function eventWithAttempts(
  db: Db,
  merchantId: string,
  environment: Environment,
  eventId: string,
): Promise<{ event: WebhookEventRow; attempts: WebhookAttemptRow[] }> {
  const event = await db
    .selectFrom("webhook_events")
    .selectAll()
    .where("id", "=", eventId)
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirst();
  if (!event) throw AppError.notFound("Webhook event not found.");
  const attempts = await db
    .selectFrom("webhook_attempts")
    .selectAll()
    .where("event_id", "=", event.id)
    .orderBy("id", "asc")
    .execute();
  return { event, attempts };
}
