import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SecretBox } from "../../src/lib/secret-box.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { readWebhookSecret } from "../../src/webhooks/secrets.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import {
  type Receiver,
  sampleTransaction,
  sleep,
  startReceiver,
  verifyLegacy,
  verifyStandard,
  waitFor,
} from "./support.js";

// Retries in fractions of a second: 0.2 s, 0.4 s, 0.6 s, 0.8 s, 1 s.
const SCHEDULE_MS = [200, 400, 600, 800, 1000];
const TIMEOUT_MS = 800;

let svc: TestService;
let box: SecretBox;
let receiver: Receiver;
let m: CreatedMerchant;

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      WEBHOOK_RETRY_SCHEDULE: SCHEDULE_MS.map((ms) => ms / 1000).join(","),
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      RATE_LIMIT_ENABLED: "false",
    },
  });
  box = new SecretBox(svc.proc.runtime.secrets.SECRET_ENCRYPTION_KEY);
  receiver = await startReceiver();
  m = await svc.createMerchant();
  await setUrl(m, receiver.url());
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});
afterEach(() => {
  receiver.set({ kind: "status", status: 200, body: "ok" });
});

function headers(merchant: CreatedMerchant, env: "production" | "sandbox" = "sandbox") {
  const k = keysOf(merchant, env);
  return { apikey: k.apiKey, "x-api-secret": k.apiSecret };
}

async function setUrl(merchant: CreatedMerchant, url: string) {
  const r = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
    headers: headers(merchant),
    json: { webhookUrl: url },
  });
  expect(r.status, r.text).toBe(200);
}

let txSeq = 0;
async function enqueue(merchant: CreatedMerchant, extra: { url?: string | null; status?: string } = {}) {
  const transactionId = `tx_test${++txSeq}_${Date.now()}`;
  const { webhookEventId } = await svc.database.db.transaction().execute((trx) =>
    enqueueWebhookEvent(trx, {
      merchantId: merchant.id,
      environment: "sandbox",
      transactionId,
      type: "deposit",
      transactionStatus: extra.status ?? "confirmed",
      data: sampleTransaction(merchant.id, transactionId, extra.status),
      ...(extra.url !== undefined ? { url: extra.url } : {}),
    }),
  );
  return { webhookEventId, transactionId };
}

async function event(merchant: CreatedMerchant, id: string) {
  const r = await call(svc.urls.sandbox, `/api/v1/webhook/events/${id}`, { headers: headers(merchant) });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

/** Puts a delivered event back in the queue (pending) with the given queue row, in one transaction. */
async function makePending(
  id: string,
  due: { locked_by: string; locked_until: Date; next_attempt_at: Date },
): Promise<void> {
  await svc.database.db.transaction().execute(async (trx) => {
    await trx
      .updateTable("webhook_events")
      .set({ delivery_status: "pending", next_attempt_at: due.next_attempt_at, delivered_at: null })
      .where("id", "=", id)
      .execute();
    await trx
      .insertInto("webhook_due")
      .values({ event_id: id, ...due })
      .execute();
  });
}

function forEvent(id: string) {
  return receiver.received.filter((r) => r.headers["webhook-id"] === id);
}

describe("webhook delivery against a real local receiver", () => {
  it("delivers a committed event at once, signed over the raw body with both schemes", async () => {
    const { webhookEventId, transactionId } = await enqueue(m);
    const [got] = await waitFor(() =>
      forEvent(webhookEventId).length > 0 ? forEvent(webhookEventId) : null,
    );
    const secret = await readWebhookSecret(svc.database.db, box, m.id, "sandbox");
    expect(got).toBeDefined();
    const r = got!;
    expect(verifyLegacy(secret, r.raw, r.headers["x-webhook-signature"] as string)).toBe(true);
    expect(verifyStandard(secret, r.raw, r.headers)).toBe(true);
    // A re-serialised body does not verify (docs/merchants/webhooks.md#signatures): the signature is over the exact bytes.
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(r.raw.toString()), null, 1));
    expect(verifyLegacy(secret, reserialised, r.headers["x-webhook-signature"] as string)).toBe(false);
    expect(verifyLegacy("whsec_wrong", r.raw, r.headers["x-webhook-signature"] as string)).toBe(false);
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.headers["x-webhook-source"]).toBe("stablegate");
    expect(r.headers["x-transaction-id"]).toBe(transactionId);
    expect(r.headers["x-webhook-test"]).toBeUndefined();
    const body = JSON.parse(r.raw.toString());
    expect(body).toMatchObject({ success: true, message: "Deposit confirmed" });
    expect(body.data).toMatchObject({ id: transactionId, transactionId, type: "deposit", amount: 12.5 });

    const e = await waitFor(async () => {
      const x = await event(m, webhookEventId);
      return x.deliveryStatus === "delivered" ? x : null;
    });
    expect(e).toMatchObject({ attempts: 1, lastResponseStatus: 200, lastError: null, nextAttemptAt: null });
    expect(e.deliveryAttempts).toHaveLength(1);
    expect(e.deliveryAttempts[0]).toMatchObject({
      attemptNumber: 1,
      manual: false,
      responseStatus: 200,
      responseBody: "ok",
    });
    expect(e.payload).toEqual(body);
  });

  it("retries on the schedule: exactly 6 attempts with the configured spacing, then failed; a manual retry then delivers", async () => {
    receiver.set({ kind: "status", status: 500, body: "x".repeat(3000) });
    const { webhookEventId } = await enqueue(m);
    const failed = await waitFor(async () => {
      const x = await event(m, webhookEventId);
      return x.deliveryStatus === "failed" ? x : null;
    }, 15_000);
    // Nothing more comes automatically.
    await sleep(1500);
    const attempts = forEvent(webhookEventId);
    expect(attempts).toHaveLength(6);
    for (let i = 1; i < attempts.length; i++) {
      const gap = attempts[i]!.at - attempts[i - 1]!.at;
      expect(gap).toBeGreaterThanOrEqual(SCHEDULE_MS[i - 1]! - 25);
      expect(gap).toBeLessThan(SCHEDULE_MS[i - 1]! + 1000);
    }
    // Same bytes and id on every attempt; a fresh timestamp signature per attempt.
    expect(new Set(attempts.map((a) => a.raw.toString())).size).toBe(1);
    expect(failed).toMatchObject({
      attempts: 6,
      lastResponseStatus: 500,
      lastError: "HTTP 500",
      nextAttemptAt: null,
    });
    expect(failed.deliveryAttempts).toHaveLength(6);
    expect(failed.deliveryAttempts[5].responseBody).toBe("x".repeat(1024)); // first 1 KB kept

    receiver.set({ kind: "status", status: 204 });
    const r = await call(svc.urls.sandbox, `/api/v1/webhook/retry/${webhookEventId}`, {
      method: "POST",
      headers: headers(m),
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ deliveryStatus: "delivered", attempts: 7, lastResponseStatus: 204 });
    expect(forEvent(webhookEventId)).toHaveLength(7);
    const after = await event(m, webhookEventId);
    expect(after.deliveryAttempts[6]).toMatchObject({ attemptNumber: 7, manual: true, responseStatus: 204 });
  });

  it.each([
    [
      "a 301 redirect (not followed)",
      { kind: "status", status: 301, headers: { location: "/elsewhere" } },
      /redirect \(HTTP 301/,
    ],
    ["a 500", { kind: "status", status: 500 }, /^HTTP 500$/],
    ["an answer slower than the timeout", { kind: "sleep", ms: TIMEOUT_MS + 700 }, /^timeout/],
  ] as const)("%s fails the attempt", async (_name, behaviour, error) => {
    receiver.set(behaviour as never);
    const { webhookEventId } = await enqueue(m);
    const e = await waitFor(async () => {
      const x = await event(m, webhookEventId);
      return x.attempts >= 1 && x.deliveryAttempts.length >= 1 ? x : null;
    });
    receiver.set({ kind: "status", status: 200 });
    expect(e.deliveryStatus).toBe("pending");
    expect(e.deliveryAttempts[0].error).toMatch(error);
    expect(e.lastError).toMatch(error);
    expect(receiver.received.some((r) => r.path === "/elsewhere")).toBe(false);
    // The retry (0.2 s later) now succeeds.
    await waitFor(async () => (await event(m, webhookEventId)).deliveryStatus === "delivered");
  });

  it("a status change rolled back produces no event and no delivery", async () => {
    const before = receiver.received.length;
    const transactionId = `tx_rolledback_${Date.now()}`;
    let eventId = "";
    await expect(
      svc.database.db.transaction().execute(async (trx) => {
        eventId = (
          await enqueueWebhookEvent(trx, {
            merchantId: m.id,
            environment: "sandbox",
            transactionId,
            type: "withdrawal",
            transactionStatus: "completed",
            data: sampleTransaction(m.id, transactionId, "completed"),
          })
        ).webhookEventId;
        throw new Error("status change failed after the event was written");
      }),
    ).rejects.toThrow("status change failed");
    expect(eventId).toMatch(/^whe_/);
    await sleep(600);
    const rows = await svc.database.db
      .selectFrom("webhook_events")
      .select("id")
      .where((eb) => eb.or([eb("id", "=", eventId), eb("transaction_id", "=", transactionId)]))
      .execute();
    expect(rows).toHaveLength(0);
    expect(receiver.received.slice(before).some((r) => r.headers["x-transaction-id"] === transactionId)).toBe(
      false,
    );
  });

  it("records events without a URL as failed and delivers them on a manual retry once a URL is set", async () => {
    const other = await svc.createMerchant();
    const { webhookEventId } = await enqueue(other);
    const e = await event(other, webhookEventId);
    expect(e).toMatchObject({ deliveryStatus: "failed", attempts: 0, url: null });
    expect(e.lastError).toMatch(/No webhook URL/);
    await setUrl(other, receiver.url("/other"));
    const r = await call(svc.urls.sandbox, `/api/v1/webhook/retry/${webhookEventId}`, {
      method: "POST",
      headers: headers(other),
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      deliveryStatus: "delivered",
      attempts: 1,
      url: receiver.url("/other"),
    });
  });

  it("sends to a per-event URL (checkout callbackUrl) instead of the webhook URL", async () => {
    const { webhookEventId } = await enqueue(m, { url: receiver.url("/callback") });
    const [got] = await waitFor(() => (forEvent(webhookEventId).length ? forEvent(webhookEventId) : null));
    expect(got!.path).toBe("/callback");
  });

  it("after a rotation signs with both secrets (Standard Webhooks) for 24 h and X-Webhook-Signature with the new one", async () => {
    const oldSecret = await readWebhookSecret(svc.database.db, box, m.id, "sandbox");
    const rot = await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", {
      method: "POST",
      headers: headers(m),
    });
    expect(rot.status).toBe(200);
    const newSecret = rot.body.data.webhookSecret as string;
    expect(newSecret).not.toBe(oldSecret);
    const { webhookEventId } = await enqueue(m);
    const [got] = await waitFor(() => (forEvent(webhookEventId).length ? forEvent(webhookEventId) : null));
    const r = got!;
    expect((r.headers["webhook-signature"] as string).split(" ")).toHaveLength(2);
    expect(verifyStandard(newSecret, r.raw, r.headers)).toBe(true);
    expect(verifyStandard(oldSecret, r.raw, r.headers)).toBe(true);
    expect(verifyLegacy(newSecret, r.raw, r.headers["x-webhook-signature"] as string)).toBe(true);
    expect(verifyLegacy(oldSecret, r.raw, r.headers["x-webhook-signature"] as string)).toBe(false);
    // 24 h later the old secret no longer signs.
    await svc.database.db
      .updateTable("webhook_endpoints")
      .set({ previous_secret_expires_at: new Date(Date.now() - 1000) })
      .where("merchant_id", "=", m.id)
      .where("environment", "=", "sandbox")
      .execute();
    const second = await enqueue(m);
    const [later] = await waitFor(() =>
      forEvent(second.webhookEventId).length ? forEvent(second.webhookEventId) : null,
    );
    expect((later!.headers["webhook-signature"] as string).split(" ")).toHaveLength(1);
    expect(verifyStandard(oldSecret, later!.raw, later!.headers)).toBe(false);
    expect(verifyStandard(newSecret, later!.raw, later!.headers)).toBe(true);
  });

  it("reclaims an event whose worker died holding the lease", async () => {
    const { webhookEventId } = await enqueue(m, { status: "pending" });
    await waitFor(async () => (await event(m, webhookEventId)).deliveryStatus === "delivered");
    // Simulate a worker that claimed the event and died before recording: pending, its queue row
    // leased, the lease expired.
    await makePending(webhookEventId, {
      locked_by: "dead-worker:1",
      locked_until: new Date(Date.now() - 1),
      next_attempt_at: new Date(Date.now() - 1),
    });
    await waitFor(() => forEvent(webhookEventId).length === 2);
    const e = await waitFor(async () => {
      const x = await event(m, webhookEventId);
      return x.deliveryStatus === "delivered" ? x : null;
    });
    expect(e.attempts).toBe(2);
  });

  it("leaves an event leased by a live worker alone until its lease ends, though it is due", async () => {
    const { webhookEventId } = await enqueue(m, { status: "pending" });
    await waitFor(async () => (await event(m, webhookEventId)).deliveryStatus === "delivered");
    const leaseEnds = Date.now() + 1_500;
    // Claimed by another worker a moment ago: due since before, leased for 1.5 s more.
    await makePending(webhookEventId, {
      locked_by: "live-worker:1",
      locked_until: new Date(leaseEnds),
      next_attempt_at: new Date(Date.now() - 60_000),
    });
    await new Promise((r) => setTimeout(r, 700)); // several polls and claims go by
    expect(forEvent(webhookEventId)).toHaveLength(1);
    await waitFor(() => forEvent(webhookEventId).length === 2);
    expect(Date.now()).toBeGreaterThanOrEqual(leaseEnds);
    const e = await waitFor(async () => {
      const x = await event(m, webhookEventId);
      return x.deliveryStatus === "delivered" ? x : null;
    });
    expect(e.attempts).toBe(2);
  });
});
