import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListenError, listen } from "../../packages/sdk/src/cli/listen.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { openStream } from "../http/webhook-stream-client.js";
import { keysOf, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, sampleTransaction, sleep, startReceiver, waitFor } from "./support.js";

// `stablegate-dev listen` against streams the gateway ends (issue #34 finding 5): at the stream's
// maximum lifetime it reconnects at once with Last-Event-ID (every event forwarded once, in
// order, no "stream lost" backoff); when the key pair loses its access it stops with the reason.

let svc: TestService;
let receiver: Receiver;

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_ENABLED: "false", WEBHOOK_STREAM_MAX_LIFETIME_SECONDS: "1.5" },
  });
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

let seq = 0;
async function enqueue(merchantId: string) {
  const transactionId = `tx_listen${++seq}_${Date.now()}`;
  const { webhookEventId } = await svc.database.db.transaction().execute((trx) =>
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

describe("listen and the stream's end", { timeout: 90_000 }, () => {
  it("a stream that ends before its first event can be resumed from the position it sent (nothing written meanwhile is lost)", async () => {
    const m = await svc.createMerchant();
    const k = keysOf(m, "sandbox");
    const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
    const first = await openStream(svc.urls.sandbox, headers);
    await waitFor(() => first.parser.lastEventId !== undefined, 5_000);
    const position = first.parser.lastEventId as string;
    expect(position).toMatch(/^pos_\d+$/);
    await first.close();
    const meanwhile = await enqueue(m.id);
    await sleep(1_000); // the new stream's own start would be after it
    const resumed = await openStream(svc.urls.sandbox, { ...headers, "last-event-id": position });
    const later = await enqueue(m.id);
    await waitFor(() => resumed.messages.length >= 2, 10_000);
    expect(resumed.messages.map((x) => x.id)).toEqual([meanwhile, later]);
    await resumed.close();
  });

  it("reconnects at once at each lifetime end, forwarding every event once in order; stops when the key is revoked", async () => {
    const m = await svc.createMerchant();
    const k = keysOf(m, "sandbox");
    const statuses: string[] = [];
    const forwarded: string[] = [];
    const controller = new AbortController();
    const running = listen({
      baseUrl: svc.urls.sandbox,
      apiKey: k.apiKey,
      apiSecret: k.apiSecret,
      environment: "sandbox",
      forwardTo: receiver.url("/listen"),
      signal: controller.signal,
      onLine: () => {},
      onStatus: (line) => statuses.push(line),
      onForward: (r) => forwarded.push(r.delivery.id),
    });
    running.catch(() => {}); // awaited below
    await waitFor(() => statuses.some((s) => s.startsWith("Ready")), 10_000);

    // Events over about 5 s: the stream ends (lifetime 1.5 s) at least twice meanwhile.
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push(await enqueue(m.id));
      await sleep(500);
    }
    await waitFor(() => forwarded.length >= ids.length, 15_000).catch((e) => {
      throw new Error(`${e}: ${forwarded.length}/${ids.length}\n${statuses.join("\n")}`);
    });
    await sleep(500);
    expect(forwarded).toEqual(ids);
    expect(receiver.received.filter((r) => r.path === "/listen").map((r) => r.headers["webhook-id"])).toEqual(
      ids,
    );
    const lifetimeEnds = statuses.filter((s) => s.includes("maximum lifetime"));
    expect(lifetimeEnds.length, statuses.join("\n")).toBeGreaterThanOrEqual(2);
    expect(
      statuses.filter((s) => s.startsWith("stream lost")),
      statuses.join("\n"),
    ).toEqual([]);

    // The key pair is revoked: listen stops with the gateway's reason instead of reconnecting.
    await svc.database.db
      .updateTable("api_keys")
      .set({ status: "revoked", revoked_reason: "revoked", revoked_at: new Date() })
      .where("id", "=", k.id)
      .execute();
    const error = await running.then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(ListenError);
    expect((error as Error).message).toMatch(/FORBIDDEN: .*revoked/);
    controller.abort();
  });
});
