import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { SecretBox } from "../../src/lib/secret-box.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { setWebhookUrl } from "../../src/webhooks/secrets.js";
import {
  registerWebhookMetrics,
  WEBHOOK_STALL_SECONDS,
  webhookQueueSummary,
  webhookReadinessCheck,
} from "../../src/webhooks/status.js";
import { openTestDatabase } from "../support/db.js";
import { sampleTransaction } from "./support.js";

/** The delivery queue as operators see it: pending, due and waiting, and how long the oldest waits. */

let database: Database;

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe("webhook queue metrics", () => {
  it("count pending and waiting events and age the oldest waiting one; leased and future ones do not wait", async () => {
    const db = database.db;
    const box = new SecretBox(randomBytes(32).toString("hex"));
    const metrics = createMetrics(false);
    registerWebhookMetrics(metrics, db);
    expect(await webhookQueueSummary(db)).toEqual({ pending: 0, due: 0, oldestDueSeconds: 0 });

    const m = await createMerchantWithKeys(
      db,
      { email: `status-${Date.now()}@example.com`, companyName: "S" },
      undefined,
      box,
    );
    await setWebhookUrl(db, box, m.id, "sandbox", "http://127.0.0.1:9/hook");
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { webhookEventId } = await db.transaction().execute((trx) =>
        enqueueWebhookEvent(trx, {
          merchantId: m.id,
          environment: "sandbox",
          transactionId: `tx_status_${i}`,
          type: "deposit",
          transactionStatus: "confirmed",
          data: sampleTransaction(m.id, `tx_status_${i}`),
        }),
      );
      ids.push(webhookEventId);
    }
    const [waitingLong, leased, later] = ids as [string, string, string, string];
    const setDue = (
      id: string,
      values: { next_attempt_at?: Date; locked_by?: string; locked_until?: Date },
    ) => db.updateTable("webhook_due").set(values).where("event_id", "=", id).execute();
    await setDue(waitingLong, { next_attempt_at: new Date(Date.now() - 120_000) });
    await setDue(leased, {
      next_attempt_at: new Date(Date.now() - 600_000),
      locked_by: "w:1",
      locked_until: new Date(Date.now() + 60_000),
    });
    await setDue(later, { next_attempt_at: new Date(Date.now() + 60_000) });

    const s = await webhookQueueSummary(db);
    expect(s.pending).toBe(4);
    // Waiting: the one due two minutes ago and the one enqueued just now.
    expect(s.due).toBe(2);
    expect(s.oldestDueSeconds).toBeGreaterThanOrEqual(119);
    expect(s.oldestDueSeconds).toBeLessThan(180);

    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^stablegate_webhook_events_pending 4$/m);
    expect(text).toMatch(/^stablegate_webhook_events_due 2$/m);
    const oldest = Number(/^stablegate_webhook_oldest_due_seconds (\S+)$/m.exec(text)?.[1]);
    expect(oldest).toBeGreaterThanOrEqual(119);

    // /readyz: fine while the oldest waits less than the stall limit, degraded beyond it.
    const ready = webhookReadinessCheck(db);
    expect(await ready.check()).toEqual({
      status: "ok",
      detail: expect.stringMatching(/^4 pending, 2 due, oldest due 1[2-7]\d s$/),
    });
    await setDue(waitingLong, {
      next_attempt_at: new Date(Date.now() - (WEBHOOK_STALL_SECONDS + 60) * 1000),
    });
    expect(await ready.check()).toEqual({
      status: "degraded",
      detail: expect.stringMatching(/^4 pending, 2 due, oldest due 3\d\d s: delivery has stalled/),
    });
  });
});
