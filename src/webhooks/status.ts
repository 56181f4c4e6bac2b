import { sql } from "kysely";
import { Gauge } from "prom-client";
import type { Db } from "../db/database.js";
import { type Metrics, sharedCollect } from "../observability/metrics.js";
import type { ReadinessCheck } from "../observability/readiness.js";

/** How long a due event may wait for a worker before `/readyz` reports webhooks `degraded`. */
export const WEBHOOK_STALL_SECONDS = 300;

export interface WebhookQueueSummary {
  /** Pending events (rows of the delivery queue). */
  pending: number;
  /** Pending events due now and held by no attempt: the backlog waiting for a worker. */
  due: number;
  /** Seconds since the oldest of those came due (0 when none is waiting). */
  oldestDueSeconds: number;
}

/** The delivery queue at this moment (one scan of `webhook_due`, which holds pending events only). */
export async function webhookQueueSummary(db: Db): Promise<WebhookQueueSummary> {
  const { rows } = await sql<{ pending: number; due: number; oldest: number }>`
    select count(*)::int as pending,
           count(*) filter (where waiting)::int as due,
           coalesce(extract(epoch from now() - min(next_attempt_at) filter (where waiting)), 0)::float8 as oldest
    from (
      select next_attempt_at,
             next_attempt_at <= now() and (locked_until is null or locked_until < now()) as waiting
      from webhook_due
    ) q`.execute(db);
  const r = rows[0];
  return { pending: r?.pending ?? 0, due: r?.due ?? 0, oldestDueSeconds: Math.max(0, r?.oldest ?? 0) };
}

/**
 * Prometheus gauges of webhook delivery, read from the database at scrape time (any instance
 * reports the same): `stablegate_webhook_events_pending`, `stablegate_webhook_events_due` and
 * `stablegate_webhook_oldest_due_seconds`. Alert on the last: it grows while due events wait for
 * a worker (none running, all stuck, or a backlog larger than they drain).
 */
export function registerWebhookMetrics(metrics: Metrics, db: Db): void {
  // One collect refreshes all three (prom-client awaits it before serialising).
  const collect = sharedCollect(refresh);
  const gauge = (name: string, help: string) =>
    new Gauge({ name, help, registers: [metrics.registry], collect });
  const pending = gauge("stablegate_webhook_events_pending", "Webhook events not yet delivered or failed");
  const due = gauge(
    "stablegate_webhook_events_due",
    "Webhook events due now that no delivery attempt holds (waiting for a worker)",
  );
  const oldest = gauge(
    "stablegate_webhook_oldest_due_seconds",
    "Seconds since the oldest webhook event waiting for a worker came due (0 when none waits)",
  );
  async function refresh() {
    const s = await webhookQueueSummary(db);
    pending.set(s.pending);
    due.set(s.due);
    oldest.set(s.oldestDueSeconds);
  }
}

/**
 * The `/readyz` line `webhooks` (not critical): the queue's counts; `degraded` once a due event
 * has waited more than WEBHOOK_STALL_SECONDS for a worker (delivery normally starts within
 * milliseconds of the commit).
 */
export function webhookReadinessCheck(db: Db): ReadinessCheck {
  return {
    name: "webhooks",
    critical: false,
    async check() {
      const s = await webhookQueueSummary(db);
      const detail = `${s.pending} pending, ${s.due} due, oldest due ${Math.round(s.oldestDueSeconds)} s`;
      return s.oldestDueSeconds > WEBHOOK_STALL_SECONDS
        ? {
            status: "degraded" as const,
            detail: `${detail}: delivery has stalled (are the workers running?)`,
          }
        : { status: "ok" as const, detail };
    },
  };
}
