import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { SecretBox } from "../../src/lib/secret-box.js";
import { type CreatedMerchant, createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { assembleDelivery } from "../../src/webhooks/delivery.js";
import { ManualDelivery } from "../../src/webhooks/manual.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { setWebhookUrl } from "../../src/webhooks/secrets.js";
import { openTestDatabase } from "../support/db.js";
import { type Receiver, sampleTransaction, startReceiver, waitFor } from "./support.js";

/**
 * The worker's pipeline (batched claims, prefetch, group-committed results) against a real
 * receiver: every attempt keeps its own exact row, leases are honoured per event inside a batch,
 * and events claimed but never attempted are given back on stop.
 */

const KEY = randomBytes(32).toString("hex");
// Long enough that no retry comes due while these tests run (each drain sees only its own events).
const SCHEDULE_MS = [60_000, 120_000];
const box = new SecretBox(KEY);

let database: Database;
let receiver: Receiver;
let m: CreatedMerchant;

/** A worker's delivery pipeline, and the manual sender of the HTTP routes on its transport. */
function delivery(options: { concurrency: number; claimBatch: number; workerId: string }) {
  const logger = createLogger("silent");
  const worker = assembleDelivery({
    db: database.db,
    box,
    logger,
    retryScheduleMs: SCHEDULE_MS,
    timeoutMs: 2_000,
    ssrfAllowCidrs: ["127.0.0.0/8"],
    ...options,
  });
  const manual = new ManualDelivery({
    db: database.db,
    box,
    logger,
    transport: worker.transport,
    retryScheduleMs: SCHEDULE_MS,
    workerId: options.workerId,
  });
  return {
    drain: (signal?: AbortSignal) => worker.pipeline.drain(signal),
    retryNow: manual.retryNow.bind(manual),
    close: () => worker.close(),
  };
}

/** Commits `n` events (50 per transaction); returns id → transaction id, in order. */
async function commit(prefix: string, n: number): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let start = 0; start < n; start += 50) {
    await database.db.transaction().execute(async (trx) => {
      for (let i = start; i < Math.min(n, start + 50); i++) {
        const transactionId = `${prefix}_${i}`;
        const { webhookEventId } = await enqueueWebhookEvent(trx, {
          merchantId: m.id,
          environment: "sandbox",
          transactionId,
          type: "deposit",
          transactionStatus: "confirmed",
          data: sampleTransaction(m.id, transactionId),
        });
        out.set(webhookEventId, transactionId);
      }
    });
  }
  return out;
}

const indexOf = (transactionId: string) => Number(transactionId.split("_").at(-1));

beforeAll(async () => {
  database = await openTestDatabase();
  receiver = await startReceiver();
  m = await createMerchantWithKeys(
    database.db,
    { email: `batch-${Date.now()}@example.com`, companyName: "Batch" },
    undefined,
    box,
  );
  await setWebhookUrl(database.db, box, m.id, "sandbox", receiver.url("/batch"));
});
afterAll(async () => {
  await receiver?.close();
  await database?.close();
});
beforeEach(() => {
  receiver.set({ kind: "status", status: 200, body: "ok" });
});

describe("batched claims and group-committed results", () => {
  it("records every attempt of a 150-event drain exactly (status, error, first 1 KB, schedule) per event", {
    timeout: 30_000,
  }, async () => {
    const events = await commit("tx_batch", 150);
    // Three kinds of answer, by the event's index: 200 with its own body, 500 with 3 KB, 301.
    receiver.set((r) => {
      const i = indexOf(r.headers["x-transaction-id"] as string);
      if (i % 3 === 0) return { kind: "status", status: 200, body: `ok-${i}` };
      if (i % 3 === 1) return { kind: "status", status: 500, body: `${i}:`.padEnd(3000, "e") };
      return { kind: "status", status: 301, headers: { location: `/moved/${i}` }, body: "" };
    });
    const started = new Date();
    const d = delivery({ concurrency: 16, claimBatch: 16, workerId: "batch-w1" });
    const attempts = await d.drain();
    await d.close();
    expect(attempts).toBe(150);

    const rows = await database.db
      .selectFrom("webhook_attempts")
      .selectAll()
      .where("event_id", "in", [...events.keys()])
      .execute();
    expect(rows).toHaveLength(150);
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(150);
    const evs = await database.db
      .selectFrom("webhook_events")
      .selectAll()
      .where("id", "in", [...events.keys()])
      .execute();
    const byId = new Map(evs.map((e) => [e.id, e]));
    // The delivery queue keeps exactly the events still pending, unleased, due when the event says.
    const queue = await database.db
      .selectFrom("webhook_due")
      .selectAll()
      .where("event_id", "in", [...events.keys()])
      .execute();
    const queued = new Map(queue.map((q) => [q.event_id, q]));
    const now = await sql<{ now: Date }>`select now() as now`.execute(database.db);
    const dbNow = (now.rows[0] as { now: Date }).now;
    for (const a of rows) {
      const i = indexOf(events.get(a.event_id) as string);
      const e = byId.get(a.event_id);
      if (!e) throw new Error(`event ${a.event_id} missing`);
      expect(a).toMatchObject({
        attempt_number: 1,
        manual: false,
        url: receiver.url("/batch"),
        worker: "batch-w1",
      });
      expect(a.latency_ms).toBeGreaterThanOrEqual(0);
      expect(a.started_at.getTime()).toBeGreaterThanOrEqual(started.getTime() - 1000);
      expect(e.locked_by).toBeNull();
      expect(e.attempts).toBe(1);
      expect(e.auto_attempts).toBe(1);
      expect(e.last_attempt_at?.getTime()).toBe(a.started_at.getTime());
      if (i % 3 === 0) {
        expect(a).toMatchObject({ response_status: 200, error: null, response_body: `ok-${i}` });
        expect(e).toMatchObject({
          delivery_status: "delivered",
          next_attempt_at: null,
          last_response_status: 200,
        });
        expect(e.delivered_at).not.toBeNull();
        expect(queued.has(a.event_id)).toBe(false);
      } else {
        if (i % 3 === 1) {
          expect(a).toMatchObject({ response_status: 500, error: "HTTP 500" });
          expect(a.response_body).toBe(`${i}:`.padEnd(1024, "e"));
        } else {
          expect(a.response_status).toBe(301);
          expect(a.error).toBe(`redirect (HTTP 301 to /moved/${i}) not followed`);
        }
        // The first retry is due SCHEDULE_MS[0] after the result was written.
        expect(e).toMatchObject({ delivery_status: "pending", last_error: a.error, delivered_at: null });
        const due = (e.next_attempt_at as Date).getTime();
        expect(due).toBeGreaterThanOrEqual(a.started_at.getTime() + SCHEDULE_MS[0]!);
        expect(due).toBeLessThanOrEqual(dbNow.getTime() + SCHEDULE_MS[0]! + 50);
        expect(queued.get(a.event_id)).toEqual({
          event_id: a.event_id,
          next_attempt_at: e.next_attempt_at,
          locked_by: null,
          locked_until: null,
        });
      }
    }
    expect(receiver.received.some((r) => r.path.startsWith("/moved"))).toBe(false);
  });

  it("a result whose lease was taken over is not applied to the event; the rest of its batch is", async () => {
    const events = await commit("tx_lease", 12);
    const [stolenId, stolenTx] = [...events.entries()][5] as [string, string];
    receiver.set((r) =>
      r.headers["webhook-id"] === stolenId
        ? { kind: "status", status: 200, body: "late", delayMs: 300 }
        : { kind: "status", status: 200, body: "ok" },
    );
    const d = delivery({ concurrency: 12, claimBatch: 12, workerId: "batch-w2" });
    const drained = d.drain();
    // While its answer is pending, another claim takes the event over (as after a lease expiry).
    await waitFor(() => receiver.received.some((r) => r.headers["x-transaction-id"] === stolenTx), 5_000, 2);
    await database.db
      .updateTable("webhook_due")
      .set({ locked_by: "another-worker:1" })
      .where("event_id", "=", stolenId)
      .execute();
    expect(await drained).toBe(12);
    await d.close();
    const evs = await database.db
      .selectFrom("webhook_events")
      .leftJoin("webhook_due", "webhook_due.event_id", "webhook_events.id")
      .select(["id", "delivery_status", "attempts", "webhook_due.locked_by"])
      .where("id", "in", [...events.keys()])
      .execute();
    expect(evs).toHaveLength(12);
    for (const e of evs) {
      if (e.id === stolenId)
        expect(e).toMatchObject({ delivery_status: "pending", attempts: 0, locked_by: "another-worker:1" });
      else expect(e).toMatchObject({ delivery_status: "delivered", attempts: 1, locked_by: null });
    }
    // The attempt itself happened, so its row is kept.
    const rows = await database.db
      .selectFrom("webhook_attempts")
      .select(["event_id", "response_body"])
      .where("event_id", "in", [...events.keys()])
      .execute();
    expect(rows).toHaveLength(12);
    expect(rows.find((r) => r.event_id === stolenId)?.response_body).toBe("late");
  });

  it("a manual retry of a pending event takes its queue row's lease: refused while a worker holds it; a failure keeps the schedule", async () => {
    const events = await commit("tx_manual", 1);
    const [id] = [...events.keys()] as [string];
    const queueRow = () =>
      database.db.selectFrom("webhook_due").selectAll().where("event_id", "=", id).executeTakeFirst();
    const due = (await queueRow())?.next_attempt_at as Date;
    await database.db
      .updateTable("webhook_due")
      .set({ locked_by: "a-worker:1", locked_until: new Date(Date.now() + 60_000) })
      .where("event_id", "=", id)
      .execute();
    const d = delivery({ concurrency: 1, claimBatch: 1, workerId: "batch-manual" });
    await expect(d.retryNow(m.id, "sandbox", id)).rejects.toMatchObject({ code: "INVALID_STATE" });
    expect(receiver.received.filter((r) => r.headers["webhook-id"] === id)).toHaveLength(0);
    // The worker's lease ends (it died): the manual retry takes the event; its failure leaves the
    // event pending at its automatic time, unleased.
    await database.db
      .updateTable("webhook_due")
      .set({ locked_until: new Date(Date.now() - 1) })
      .where("event_id", "=", id)
      .execute();
    receiver.set({ kind: "status", status: 503, body: "later" });
    const failed = await d.retryNow(m.id, "sandbox", id);
    expect(failed).toMatchObject({ delivery_status: "pending", attempts: 1, auto_attempts: 0 });
    expect(failed.next_attempt_at).toEqual(due);
    expect(await queueRow()).toEqual({
      event_id: id,
      next_attempt_at: due,
      locked_by: null,
      locked_until: null,
    });
    // A success ends the pending state: the queue row goes; the event keeps its own lease columns free.
    receiver.set({ kind: "status", status: 200, body: "ok" });
    const delivered = await d.retryNow(m.id, "sandbox", id);
    expect(delivered).toMatchObject({
      delivery_status: "delivered",
      attempts: 2,
      next_attempt_at: null,
      locked_by: null,
    });
    expect(await queueRow()).toBeUndefined();
    // Delivered: a manual retry leases the event row itself; while that lease holds, another is refused.
    await database.db
      .updateTable("webhook_events")
      .set({ locked_by: "someone:1", locked_until: new Date(Date.now() + 60_000) })
      .where("id", "=", id)
      .execute();
    await expect(d.retryNow(m.id, "sandbox", id)).rejects.toMatchObject({ code: "INVALID_STATE" });
    await d.close();
  });

  it("an event written without the queue in mind (as the previous version's processes write it) is queued and delivered", async () => {
    const id = `whe_plain_${Date.now()}`;
    // The outbox of the version before migration 0010: the event row alone.
    await database.db
      .insertInto("webhook_events")
      .values({
        id,
        merchant_id: m.id,
        environment: "sandbox",
        transaction_id: "tx_plain",
        type: "deposit",
        transaction_status: "confirmed",
        url_override: null,
        url: receiver.url("/batch"),
        body: JSON.stringify({ success: true, message: "plain", data: { id: "tx_plain" } }),
        next_attempt_at: sql<Date>`now()`,
        locked_by: null,
        locked_until: null,
        last_attempt_at: null,
        last_response_status: null,
        last_error: null,
        delivered_at: null,
      })
      .execute();
    const d = delivery({ concurrency: 4, claimBatch: 4, workerId: "batch-plain" });
    expect(await d.drain()).toBeGreaterThanOrEqual(1);
    await d.close();
    expect(receiver.received.filter((r) => r.headers["webhook-id"] === id)).toHaveLength(1);
    const e = await database.db
      .selectFrom("webhook_events")
      .select(["delivery_status", "attempts"])
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(e).toEqual({ delivery_status: "delivered", attempts: 1 });
    expect(
      await database.db.selectFrom("webhook_due").select("event_id").where("event_id", "=", id).execute(),
    ).toEqual([]);
  });

  it("on stop, events claimed ahead but never attempted are given back at once (due, unleased)", async () => {
    const events = await commit("tx_stop", 60);
    receiver.set({ kind: "status", status: 200, body: "ok", delayMs: 30 });
    const d = delivery({ concurrency: 2, claimBatch: 20, workerId: "batch-w3" });
    const ac = new AbortController();
    const drained = d.drain(ac.signal);
    const ids = new Set(events.keys());
    await waitFor(() => receiver.received.some((r) => ids.has(r.headers["webhook-id"] as string)), 5_000, 2);
    ac.abort();
    const attempted = await drained;
    await d.close();
    expect(attempted).toBeGreaterThan(0);
    expect(attempted).toBeLessThan(60);
    const rows = await database.db
      .selectFrom("webhook_attempts")
      .select("event_id")
      .where("event_id", "in", [...ids])
      .execute();
    expect(rows).toHaveLength(attempted);
    const received = receiver.received.filter((r) => ids.has(r.headers["webhook-id"] as string));
    expect(received).toHaveLength(attempted);
    const rest = await database.db
      .selectFrom("webhook_events")
      .innerJoin("webhook_due", "webhook_due.event_id", "webhook_events.id")
      .select(["id", "webhook_due.locked_by", "attempts", "delivery_status"])
      .select(sql<boolean>`webhook_due.next_attempt_at <= now()`.as("due"))
      .where("id", "in", [...ids])
      .where("attempts", "=", 0)
      .execute();
    expect(rest).toHaveLength(60 - attempted);
    for (const e of rest) expect(e).toMatchObject({ delivery_status: "pending", locked_by: null, due: true });
  });
});
