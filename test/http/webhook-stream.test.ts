import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecretBox } from "../../src/lib/secret-box.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { WebhookStreamHub } from "../../src/webhooks/stream.js";
import { sandboxMerchant } from "../deposits/support.js";
import { onPostgres } from "../support/db.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import {
  type Receiver,
  sampleTransaction,
  sleep,
  startReceiver,
  verifyLegacy,
  verifyStandard,
  waitFor,
} from "../webhooks/support.js";
import { type OpenStream, openStream } from "./webhook-stream-client.js";

// GET /api/v1/webhook/stream against the real service: auth, real deliveries byte for byte with
// verifiable signatures, order, resume with Last-Event-ID, the out-of-order commit, the per-key
// limit, and a graceful stop that does not wait for open streams.

let svc: TestService;
let receiver: Receiver;
const streams: OpenStream[] = [];

beforeAll(async () => {
  svc = await startTestService({
    env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false", CHECKOUT_MIN_EXPIRY_SECONDS: "1" },
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  for (const s of streams) await s.close();
  await receiver?.close();
  await svc?.close();
});

async function stream(headers: Record<string, string>, query = "", base = svc.urls.sandbox) {
  const s = await openStream(base, headers, query);
  streams.push(s);
  return s;
}

function keyHeaders(m: CreatedMerchant, env: "sandbox" | "production" = "sandbox") {
  const k = keysOf(m, env);
  return { apikey: k.apiKey, "x-api-secret": k.apiSecret };
}

/** WEBHOOK_STREAM_MAX_PER_KEY's default (counted across instances: test/security/22-stream-caps.test.ts). */
const MAX_STREAMS_PER_KEY = 5;

let seq = 0;
/** One outbox event in a transaction of its own (what every status change does). */
async function enqueue(merchantId: string, status = "completed") {
  const transactionId = `tx_stream${++seq}_${Date.now()}`;
  const { webhookEventId } = await svc.database.db.transaction().execute((trx) =>
    enqueueWebhookEvent(trx, {
      merchantId,
      environment: "sandbox",
      transactionId,
      type: "payout",
      transactionStatus: status,
      data: sampleTransaction(merchantId, transactionId, status),
    }),
  );
  return webhookEventId;
}

const waitCount = (s: OpenStream, n: number, ms = 15_000) => waitFor(() => s.messages.length >= n, ms);

describe("authentication", () => {
  it("refuses a missing key, a missing or wrong secret and the other environment's key, in the envelope", async () => {
    const m = await svc.createMerchant();
    const k = keysOf(m, "sandbox");
    const cases: [Record<string, string>, number, string, string?][] = [
      [{}, 401, "INVALID_AUTH"],
      [{ apikey: k.apiKey }, 401, "INVALID_AUTH"],
      [{ apikey: k.apiKey, "x-api-secret": `${k.apiSecret}x` }, 401, "INVALID_AUTH"],
      [keyHeaders(m, "production"), 403, "FORBIDDEN"],
      [keyHeaders(m), 403, "FORBIDDEN", svc.urls.production],
    ];
    for (const [headers, status, code, base] of cases) {
      const r = await call(base ?? svc.urls.sandbox, "/api/v1/webhook/stream", { headers });
      expect(r.status, `${JSON.stringify(headers)}: ${r.text}`).toBe(status);
      expect(r.body).toMatchObject({ success: false, error: { code } });
      expect(r.headers.get("content-type")).toMatch(/application\/json/);
    }
  });

  it("refuses an unknown, foreign or malformed Last-Event-ID", async () => {
    const m = await svc.createMerchant();
    const other = await svc.createMerchant();
    const foreign = await enqueue(other.id);
    const unknown = await call(svc.urls.sandbox, "/api/v1/webhook/stream", {
      headers: { ...keyHeaders(m), "last-event-id": "whe_doesnotexist" },
    });
    expect(unknown.status, unknown.text).toBe(404);
    expect(unknown.body.error.code).toBe("NOT_FOUND");
    const theirs = await call(svc.urls.sandbox, `/api/v1/webhook/stream?lastEventId=${foreign}`, {
      headers: keyHeaders(m),
    });
    expect(theirs.status, theirs.text).toBe(404);
    for (const bad of ["x y", "a".repeat(101)]) {
      const r = await call(
        svc.urls.sandbox,
        `/api/v1/webhook/stream?lastEventId=${encodeURIComponent(bad)}`,
        {
          headers: keyHeaders(m),
        },
      );
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
    }
    const extra = await call(svc.urls.sandbox, "/api/v1/webhook/stream?from=0", { headers: keyHeaders(m) });
    expect(extra.status, extra.text).toBe(400);
  });
});

describe("deliveries", () => {
  it("streams a real deposit's delivery and a test delivery: the exact bytes the receiver got, signed, in order", async () => {
    const sm = await sandboxMerchant(svc, receiver, "/stream-real");
    const other = await svc.createMerchant();
    const s = await stream(sm.headers);
    expect(s.res.status).toBe(200);
    expect(s.res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(s.res.headers.get("cache-control")).toBe("no-cache, no-transform");

    const session = await call(svc.urls.sandbox, "/checkout/session", {
      headers: sm.headers,
      json: { amount: 12.5, currencyType: "USDT-TRC20" },
    });
    expect(session.status, session.text).toBe(201);
    const paid = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${session.body.data.id}/pay`, {
      headers: sm.headers,
      method: "POST",
    });
    expect(paid.status, paid.text).toBe(202);
    await waitCount(s, 1);
    const test = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      headers: sm.headers,
      method: "POST",
    });
    expect(test.status, test.text).toBe(200);
    await enqueue(other.id); // another merchant's event never shows
    await waitCount(s, 2);
    await sleep(1_200);
    expect(s.messages.map((x) => [x.type, x.transactionStatus, x.isTest])).toEqual([
      ["deposit", "confirmed", false],
      ["test", "test", true],
    ]);
    const [deposit, testEvent] = s.messages as [(typeof s.messages)[0], (typeof s.messages)[0]];
    expect(deposit.transactionId).toBe(session.body.data.id);
    expect(testEvent.id).toBe(test.body.data.webhookEventId);

    // What the real delivery brought the receiver, byte for byte, and headers of the same scheme.
    const delivered = await waitFor(() =>
      receiver.received.filter((r) => r.path === "/stream-real").length >= 2
        ? receiver.received.filter((r) => r.path === "/stream-real")
        : null,
    );
    for (const [i, msg] of s.messages.entries()) {
      const real = delivered.find((r) => r.headers["webhook-id"] === msg.id);
      expect(real, `delivery of ${msg.id}`).toBeDefined();
      const raw = Buffer.from(msg.body, "utf8");
      expect(raw.equals(real!.raw), `body ${i}`).toBe(true);
      expect(Object.keys(msg.headers).sort()).toEqual(
        Object.keys(real!.headers)
          .filter(
            (h) =>
              ![
                "host",
                "connection",
                "content-length",
                "accept",
                "accept-encoding",
                "accept-language",
                "sec-fetch-mode",
              ].includes(h),
          )
          .sort(),
      );
      for (const h of [
        "content-type",
        "user-agent",
        "x-webhook-source",
        "x-transaction-id",
        "webhook-id",
        "x-webhook-test",
      ]) {
        expect(msg.headers[h], h).toBe(real!.headers[h]);
      }
      expect(verifyLegacy(sm.webhookSecret, raw, msg.headers["x-webhook-signature"])).toBe(true);
      expect(verifyStandard(sm.webhookSecret, raw, msg.headers)).toBe(true);
      expect(
        verifyLegacy(sm.webhookSecret, Buffer.from(`${msg.body} `), msg.headers["x-webhook-signature"]),
      ).toBe(false);
      const stored = await svc.database.db
        .selectFrom("webhook_events")
        .select(["body", "merchant_id"])
        .where("id", "=", msg.id)
        .executeTakeFirstOrThrow();
      expect(stored.body).toBe(msg.body);
      expect(stored.merchant_id).toBe(sm.merchant.id);
    }
    // SSE framing: `id:` precedes each message and is the event id (checked by the client too).
    const text = s.raw.join("");
    expect(text.startsWith("retry: 2000\n")).toBe(true);
    expect(text).toContain(`id: ${deposit.id}\nevent: webhook\ndata: `);
  });

  it("streams events without a webhook URL too, in commit order of their transactions", async () => {
    const m = await svc.createMerchant();
    const s = await stream(keyHeaders(m));
    await sleep(100);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await enqueue(m.id, i % 2 ? "completed" : "failed"));
    await waitCount(s, 12);
    await sleep(1_000);
    expect(s.messages.map((x) => x.id)).toEqual(ids);
    const secret = (
      await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", {
        headers: keyHeaders(m),
        method: "POST",
      })
    ).body.data.webhookSecret as string;
    // After a rotation, new messages are signed with the new secret.
    const after = await enqueue(m.id);
    await waitCount(s, 13);
    const last = s.messages[12]!;
    expect(last.id).toBe(after);
    expect(verifyLegacy(secret, Buffer.from(last.body), last.headers["x-webhook-signature"])).toBe(true);
  });

  it("resumes after a dropped connection with Last-Event-ID (header or query): exactly the missed events", async () => {
    const m = await svc.createMerchant();
    const first = await stream(keyHeaders(m));
    await sleep(100);
    const before = [await enqueue(m.id), await enqueue(m.id)];
    await waitCount(first, 2);
    await first.close(); // the connection drops
    const missed = [await enqueue(m.id), await enqueue(m.id), await enqueue(m.id)];
    await sleep(800); // past the horizon: they are ready to stream before anyone reconnects

    const resumed = await stream({ ...keyHeaders(m), "last-event-id": before[1]! });
    const later = await enqueue(m.id);
    await waitCount(resumed, 4);
    await sleep(1_200);
    expect(first.messages.map((x) => x.id)).toEqual(before);
    expect(resumed.messages.map((x) => x.id)).toEqual([...missed, later]);

    const byQuery = await stream(keyHeaders(m), `?lastEventId=${missed[0]}`);
    await waitCount(byQuery, 3);
    await sleep(1_000);
    expect(byQuery.messages.map((x) => x.id)).toEqual([...missed.slice(1), later]);
    // The header wins over the query.
    const both = await stream({ ...keyHeaders(m), "last-event-id": missed[2]! }, `?lastEventId=${before[0]}`);
    await waitCount(both, 1);
    await sleep(1_000);
    expect(both.messages.map((x) => x.id)).toEqual([later]);
  });

  it.skipIf(!onPostgres)(
    "an event whose transaction started first but commits last is streamed, in order, not skipped",
    async () => {
      // PostgreSQL only: PGlite runs one transaction at a time, so there commits cannot overtake.
      const m = await svc.createMerchant();
      const s = await stream(keyHeaders(m));
      await sleep(100);
      let commit!: () => void;
      const gate = new Promise<void>((r) => {
        commit = r;
      });
      let early = "";
      let enqueued!: () => void;
      const written = new Promise<void>((r) => {
        enqueued = r;
      });
      // The slow transaction: its event has the older created_at, and becomes visible last.
      const slow = svc.database.db.transaction().execute(async (trx) => {
        const r = await enqueueWebhookEvent(trx, {
          merchantId: m.id,
          environment: "sandbox",
          transactionId: "tx_slow",
          type: "payout",
          transactionStatus: "completed",
          data: sampleTransaction(m.id, "tx_slow", "completed"),
        });
        early = r.webhookEventId;
        enqueued();
        await gate;
      });
      await written;
      await sleep(20);
      const fast = await enqueue(m.id); // commits first
      const rows = await svc.database.db
        .selectFrom("webhook_events")
        .select(["id", "created_at"])
        .where("id", "in", [early, fast])
        .execute();
      expect(rows).toHaveLength(1); // the slow one is not visible yet
      await sleep(1_500);
      expect(s.messages).toEqual([]); // held back, not sent ahead of the one still open
      commit();
      await slow;
      await waitCount(s, 2);
      await sleep(1_000);
      expect(s.messages.map((x) => x.id)).toEqual([early, fast]);

      // A resume after the late one does not repeat it or lose the other.
      const resumed = await stream({ ...keyHeaders(m), "last-event-id": early });
      await waitCount(resumed, 1);
      await sleep(800);
      expect(resumed.messages.map((x) => x.id)).toEqual([fast]);
    },
    30_000,
  );
});

describe("limits and lifecycle", () => {
  it(`allows ${MAX_STREAMS_PER_KEY} open streams per API key; the next is a 429 until one closes`, async () => {
    const m = await svc.createMerchant();
    const open: OpenStream[] = [];
    for (let i = 0; i < MAX_STREAMS_PER_KEY; i++) {
      const s = await stream(keyHeaders(m));
      expect(s.res.status).toBe(200);
      open.push(s);
    }
    const refused = await call(svc.urls.sandbox, "/api/v1/webhook/stream", { headers: keyHeaders(m) });
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body).toMatchObject({
      success: false,
      message: expect.stringMatching(/at most 5 webhook streams/i),
    });
    expect(refused.headers.get("retry-after")).toBe("5");
    // Another key of another merchant is not affected.
    const other = await svc.createMerchant();
    expect((await stream(keyHeaders(other))).res.status).toBe(200);
    await open[0]!.close();
    await waitFor(async () => {
      const again = await fetch(`${svc.urls.sandbox}/api/v1/webhook/stream`, { headers: keyHeaders(m) });
      if (again.status === 200) {
        await again.body?.cancel();
        return true;
      }
      await again.text();
      return false;
    }, 5_000);
  });

  it("sends keep-alive comments while idle (hub)", async () => {
    const m = await svc.createMerchant();
    const hub = new WebhookStreamHub({
      database: svc.database,
      box: new SecretBox(svc.proc.runtime.secrets.SECRET_ENCRYPTION_KEY),
      logger: svc.proc.runtime.logger,
      heartbeatMs: 150,
      pollMs: 50,
      limits: { perKey: 5, perMerchant: 10, total: 200 },
    });
    let beats = 0;
    let ended = false;
    const got: string[] = [];
    await hub.subscribe({
      merchantId: m.id,
      environment: "sandbox",
      apiKeyId: m.keys[0]!.id,
      cursor: { fromTime: "-infinity" },
      authorize: async () => {},
      send: async (d) => {
        got.push(d.id);
      },
      heartbeat: () => {
        beats++;
      },
      alive: () => true,
      end: () => {
        ended = true;
      },
    });
    await waitFor(() => beats >= 2, 5_000);
    const id = await enqueue(m.id);
    await waitFor(() => got.length === 1, 5_000);
    expect(got).toEqual([id]);
    await hub.close();
    await waitFor(() => ended, 2_000);
    expect(hub.size).toBe(0);
  });

  it("a graceful stop ends open streams at once instead of waiting for them", async () => {
    const own = await startTestService({
      env: { RATE_LIMIT_ENABLED: "false", SHUTDOWN_TIMEOUT_MS: "20000" },
    });
    try {
      const m = await own.createMerchant();
      const s = await openStream(own.urls.sandbox, keyHeaders(m));
      expect(s.res.status).toBe(200);
      const started = Date.now();
      await own.proc.stop();
      // A stop that waited for the open stream would last the whole 20 s shutdown timeout; the
      // margin is wide so a busy machine cannot fail it.
      expect(Date.now() - started).toBeLessThan(15_000);
      await s.done;
      expect(s.ended).toBe(true);
    } finally {
      await own.close();
    }
  });
});
