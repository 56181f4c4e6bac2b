import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveSnapshot, LiveStatusHub } from "../../src/pay/live-status.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { type OpenStream, openStream } from "../http/webhook-stream-client.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, otpFor, registerOwner } from "../team/support.js";
import { sampleTransaction, sleep, waitFor } from "../webhooks/support.js";

// Issue #34 finding 5 (Medium): a revoked key's webhook stream kept delivering signed deliveries.
// docs/decisions/webhooks.md#the-webhook-streams-access-and-places-issue-34-findings-5-and-9: long-lived connections are re-authorised; revoking, rotating or demoting ends them
// within seconds. Every change that takes the key's access away (revoke, rotate, the merchant's IP
// allowlist, the merchant suspended, the key's creator demoted or removed) ends an open stream
// with a last `event: end` message, and nothing written after the change is streamed. Every
// stream also has a maximum lifetime (the client reconnects with Last-Event-ID).

/** Re-checks only every 60 s here: what ends a stream in seconds is the change's notification. */
let svc: TestService;
/** No notification reaches it (triggers off for the change): the periodic re-check (1 s) ends it; 4 s lifetime. */
let short: TestService;
const streams: OpenStream[] = [];

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_ENABLED: "false", WEBHOOK_STREAM_REAUTH_SECONDS: "60" },
  });
  short = await startTestService({
    env: {
      RATE_LIMIT_ENABLED: "false",
      WEBHOOK_STREAM_REAUTH_SECONDS: "1",
      WEBHOOK_STREAM_MAX_LIFETIME_SECONDS: "4",
    },
  });
}, 120_000);
afterAll(async () => {
  for (const s of streams) await s.close();
  await svc?.close();
  await short?.close();
});

async function stream(s: TestService, headers: Headers, query = "") {
  const o = await openStream(s.urls.sandbox, headers, query);
  streams.push(o);
  expect(o.res.status).toBe(200);
  await waitFor(() => o.raw.join("").includes(": connected"), 5_000);
  return o;
}

let seq = 0;
async function enqueue(s: TestService, merchantId: string) {
  const transactionId = `tx_s21_${++seq}_${Date.now()}`;
  const { webhookEventId } = await s.database.db.transaction().execute((trx) =>
    enqueueWebhookEvent(trx, {
      merchantId,
      environment: "sandbox",
      transactionId,
      type: "payout",
      transactionStatus: "completed",
      data: sampleTransaction(merchantId, transactionId, "completed"),
    }),
  );
  return webhookEventId;
}

/** The stream ends within `ms` with `event: end` of this reason; returns its data. */
async function endsWithin(o: OpenStream, ms: number, reason: string) {
  const started = Date.now();
  await waitFor(() => o.ended, ms);
  const end = o.others.find((m) => m.event === "end");
  expect(end, `an end message in ${o.raw.join("")}`).toBeDefined();
  const data = JSON.parse(end!.data);
  expect(data.reason).toBe(reason);
  return { data, tookMs: Date.now() - started };
}

async function sandboxKeyId(bearer: Headers, apiKey: string): Promise<string> {
  const r = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", { headers: bearer });
  expect(r.status, r.text).toBe(200);
  const k = r.body.data.find((x: { apiKey: string }) => x.apiKey === apiKey);
  return k.id as string;
}

describe("a change that takes the key's access away ends its open stream within seconds", {
  timeout: 90_000,
}, () => {
  it("revoking the key pair: the stream ends, and nothing written after the revocation is streamed", async () => {
    const owner = await registerOwner(svc);
    const o = await stream(svc, owner.sandboxApi);
    const before = await enqueue(svc, owner.merchantId);
    await waitFor(() => o.messages.length === 1, 10_000);
    expect(o.messages[0]!.id).toBe(before);

    const id = await sandboxKeyId(owner.bearer, owner.sandboxApi.apikey);
    const revoked = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${id}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(revoked.status, revoked.text).toBe(200);
    const after = await enqueue(svc, owner.merchantId);
    const { data, tookMs } = await endsWithin(o, 5_000, "access");
    expect(tookMs).toBeLessThan(5_000);
    expect(data.error).toMatchObject({ code: "FORBIDDEN", message: expect.stringMatching(/revoked/) });
    await sleep(1_000);
    expect(o.messages.map((m) => m.id)).toEqual([before]);
    expect(o.messages.map((m) => m.id)).not.toContain(after);
    // And it cannot come back.
    const again = await call(svc.urls.sandbox, "/api/v1/webhook/stream", { headers: owner.sandboxApi });
    expect(again.status, again.text).toBe(403);
  });

  it("rotating the key pair ends the old pair's stream; the new pair streams", async () => {
    const owner = await registerOwner(svc);
    const o = await stream(svc, owner.sandboxApi);
    const id = await sandboxKeyId(owner.bearer, owner.sandboxApi.apikey);
    const rotated = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${id}/rotate`, {
      headers: owner.bearer,
      json: {},
    });
    expect(rotated.status, rotated.text).toBe(200);
    const { data } = await endsWithin(o, 5_000, "access");
    expect(data.error.message).toMatch(/rotated/);
    const fresh = await stream(svc, {
      apikey: rotated.body.data.apiKey,
      "x-api-secret": rotated.body.data.apiSecret,
    });
    const ev = await enqueue(svc, owner.merchantId);
    await waitFor(() => fresh.messages.length === 1, 10_000);
    expect(fresh.messages[0]!.id).toBe(ev);
    expect(fresh.ended).toBe(false);
  });

  it("an IP allowlist that no longer admits the stream's client ends it; an unrelated settings change does not", async () => {
    const owner = await registerOwner(svc);
    const o = await stream(svc, owner.sandboxApi);
    const harmless = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
      method: "PATCH",
      headers: owner.bearer,
      json: { autoWithdraw: true, ipAllowlist: ["127.0.0.0/8"] },
    });
    expect(harmless.status, harmless.text).toBe(200);
    await sleep(1_500);
    expect(o.ended).toBe(false);
    const ev = await enqueue(svc, owner.merchantId);
    await waitFor(() => o.messages.length === 1, 10_000);
    expect(o.messages[0]!.id).toBe(ev);

    const narrowed = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
      method: "PATCH",
      headers: owner.bearer,
      json: { ipAllowlist: ["10.0.0.0/8"] },
    });
    expect(narrowed.status, narrowed.text).toBe(200);
    const { data } = await endsWithin(o, 5_000, "access");
    expect(data.error.message).toMatch(/allowlist/);
  });

  it("suspending the merchant ends its streams", async () => {
    const owner = await registerOwner(svc);
    const o = await stream(svc, owner.sandboxApi);
    await svc.database.db
      .updateTable("merchants")
      .set({ status: "suspended" })
      .where("id", "=", owner.merchantId)
      .execute();
    const { data } = await endsWithin(o, 5_000, "access");
    expect(data.error.message).toMatch(/suspended/);
  });

  it("demoting the key's creator below what the stream needs, or removing it, ends the stream", async () => {
    const owner = await registerOwner(svc);
    const admin = await addMember(svc, owner.bearer, "admin", "sandbox");
    const mint = async () => {
      const r = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", {
        headers: admin.bearer,
        json: { environment: "sandbox" },
      });
      expect(r.status, r.text).toBe(201);
      return { apikey: r.body.data.apiKey as string, "x-api-secret": r.body.data.apiSecret as string };
    };
    const first = await stream(svc, await mint());
    const demoted = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${admin.userId}`, {
      method: "PATCH",
      headers: owner.bearer,
      json: { role: "viewer", otp: await otpFor(svc.urls.sandbox, owner.bearer) },
    });
    expect(demoted.status, demoted.text).toBe(200);
    const { data } = await endsWithin(first, 5_000, "access");
    expect(data.error.details).toMatchObject({ reason: "key_owner_role" });

    // A member removed: the streams of the pairs it created end (until an owner reassigns them).
    const developer = await addMember(svc, owner.bearer, "developer", "sandbox");
    const minted = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", {
      headers: developer.bearer,
      json: { environment: "sandbox" },
    });
    expect(minted.status, minted.text).toBe(201);
    const second = await stream(svc, {
      apikey: minted.body.data.apiKey,
      "x-api-secret": minted.body.data.apiSecret,
    });
    const removed = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${developer.userId}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(removed.status, removed.text).toBe(200);
    const gone = await endsWithin(second, 5_000, "access");
    expect(gone.data.error.details).toMatchObject({ reason: "key_owner_removed" });
  });
});

describe("the periodic re-check (no notification reaches the stream)", { timeout: 90_000 }, () => {
  it("a revocation written with triggers switched off still ends the stream within the re-check interval", async () => {
    const owner = await registerOwner(short);
    const o = await openStream(short.urls.sandbox, owner.sandboxApi);
    streams.push(o);
    expect(o.res.status).toBe(200);
    await waitFor(() => o.raw.join("").includes(": connected"), 5_000);
    await short.database.db.transaction().execute(async (trx) => {
      // No trigger fires (no NOTIFY): only the periodic re-check can notice.
      await sql`set local session_replication_role = replica`.execute(trx);
      await trx
        .updateTable("api_keys")
        .set({ status: "revoked", revoked_reason: "revoked", revoked_at: new Date() })
        .where("api_key", "=", owner.sandboxApi.apikey)
        .execute();
    });
    const { data, tookMs } = await endsWithin(o, 3_500, "access");
    expect(tookMs).toBeLessThan(3_500);
    expect(data.error.code).toBe("FORBIDDEN");
  });
});

describe("maximum lifetime", { timeout: 90_000 }, () => {
  it("ends a stream after WEBHOOK_STREAM_MAX_LIFETIME_SECONDS; a reconnect with Last-Event-ID misses nothing", async () => {
    const owner = await registerOwner(short);
    const started = Date.now();
    const o = await openStream(short.urls.sandbox, owner.sandboxApi);
    streams.push(o);
    expect(o.res.status).toBe(200);
    const first = await enqueue(short, owner.merchantId);
    await waitFor(() => o.messages.length === 1, 10_000);
    await waitFor(() => o.ended, 8_000);
    const lived = Date.now() - started;
    expect(lived).toBeGreaterThanOrEqual(3_900);
    expect(lived).toBeLessThan(7_000);
    const end = o.others.find((m) => m.event === "end");
    expect(JSON.parse(end!.data)).toEqual({ reason: "lifetime" });
    const missed = await enqueue(short, owner.merchantId);
    const resumed = await openStream(short.urls.sandbox, { ...owner.sandboxApi, "last-event-id": first });
    streams.push(resumed);
    await waitFor(() => resumed.messages.length === 1, 10_000);
    expect(resumed.messages.map((m) => m.id)).toEqual([missed]);
  });

  it("the hosted pay page's live status (public, no credential) has a maximum lifetime too", async () => {
    let now = 1_000_000;
    const snapshot: LiveSnapshot = {
      status: "pending",
      amount: 10_000_000n,
      actualBalance: 0n,
      confirmedAt: null,
      blockchainTxHash: null,
      detectedAmount: 0n,
      confirmations: { current: 0, required: 20 },
    };
    const hub = new LiveStatusHub({
      load: async (ids) => new Map(ids.map((id) => [id, snapshot])),
      now: () => now,
      intervalMs: 10_000,
      maxLifetimeMs: 60_000,
    });
    let ended = 0;
    hub.subscribe(
      {
        sessionId: "cs_1",
        onChange: () => {},
        onHeartbeat: () => {},
        alive: () => true,
        onEnd: () => {
          ended++;
        },
      },
      snapshot,
    );
    now += 59_000;
    await hub.pollNow();
    expect(ended).toBe(0);
    now += 1_000;
    await hub.pollNow();
    expect(ended).toBe(1);
    expect(hub.size).toBe(0);
    hub.close();
  });
});
