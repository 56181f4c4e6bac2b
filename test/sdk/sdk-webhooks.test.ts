import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Stablegate,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from "../../packages/sdk/src/index.js";
import { TEST_FAILURE_ADDRESSES } from "../../src/domain/currency.js";
import { startTestService, type TestService } from "../support/harness.js";
import { type Received, type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { createPayout, fund, type SdkMerchant, sdkMerchant, TRON_TO } from "./support/merchant.js";

// Real deliveries, captured by a real local HTTP receiver, verified by the SDK and by the
// Standard Webhooks library; and every way a forged or replayed one is refused.
let svc: TestService;
let receiver: Receiver;
let m: SdkMerchant;
let client: Stablegate;
let secret: string;
const TRC = "USDT-TRC20";

const bodyOf = (r: Received) => JSON.parse(r.raw.toString("utf8")) as WebhookEvent;
const kindOf = (r: Received) => `${bodyOf(r).data.type}.${bodyOf(r).data.status}`;
/** Node's IncomingHttpHeaders as the record of strings the Standard Webhooks library takes. */
const stringHeaders = (r: Received) =>
  Object.fromEntries(Object.entries(r.headers).filter(([, v]) => typeof v === "string")) as Record<
    string,
    string
  >;

async function settled(id: string) {
  return waitFor(async () => {
    const w = await client.withdrawals.get(id);
    return w.status === "pending" || w.status === "processing" ? null : w;
  }, 20_000);
}

const EXPECTED = [
  "deposit.confirmed", // checkout session paid
  "deposit.failed", // checkout session expired unpaid
  "withdrawal.completed", // auto-executed, and approved
  "withdrawal.failed", // to the sandbox failure address
  "withdrawal.pending", // over the auto-approve threshold
  "withdrawal.rejected",
  "payout.completed",
  "test.test", // POST /webhook/test
];

beforeAll(async () => {
  svc = await startTestService({
    env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false", CHECKOUT_MIN_EXPIRY_SECONDS: "1" },
  });
  receiver = await startReceiver();
  m = await sdkMerchant(svc, { webhookUrl: receiver.url() });
  client = m.client;
  secret = m.webhookSecret as string;

  await fund(client, 4000, TRC);
  const wallet = await client.wallets.generate({ currencyType: TRC, label: "hooks" });
  await client.sandbox.payWallet(wallet.address, { amount: 3, currencyType: TRC });
  const expiring = await client.checkoutSessions.create({
    amount: 5,
    currencyType: TRC,
    expiresInMinutes: 1 / 60,
  });
  const auto = await client.withdrawals.create({ amount: 10, currencyType: TRC, walletAddress: TRON_TO });
  const failing = await client.withdrawals.create({
    amount: 11,
    currencyType: TRC,
    walletAddress: TEST_FAILURE_ADDRESSES[TRC],
  });
  const approved = await client.withdrawals.create({
    amount: 1500,
    currencyType: TRC,
    walletAddress: TRON_TO,
  });
  await client.withdrawals.approve(approved.id);
  const rejected = await client.withdrawals.create({
    amount: 1200,
    currencyType: TRC,
    walletAddress: TRON_TO,
  });
  await client.withdrawals.reject(rejected.id, { reason: "not today" });
  await createPayout(svc, m.bearer, { amount: 20, currencyType: TRC, walletAddress: TRON_TO });
  await client.webhooks.test();
  await Promise.all([auto.id, failing.id, approved.id].map(settled));
  await waitFor(async () => (await client.checkoutSessions.get(expiring.id)).status === "failed", 20_000);
  await waitFor(() => EXPECTED.every((k) => receiver.received.some((r) => kindOf(r) === k)), 20_000);
}, 90_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function reason(p: Promise<unknown>): Promise<WebhookVerificationReason | "accepted"> {
  try {
    await p;
    return "accepted";
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
}

describe("webhooks.verify on real deliveries", () => {
  it("captured every kind of delivery: deposits, withdrawals, a payout, a test", () => {
    const kinds = new Set(receiver.received.map(kindOf));
    for (const k of EXPECTED) expect(kinds).toContain(k);
    expect(receiver.received.length).toBeGreaterThanOrEqual(10);
  });

  it("accepts every one and returns its parsed, typed body (Node headers and Buffer; fetch Headers and string)", async () => {
    for (const r of receiver.received) {
      const event = await client.webhooks.verify(r.raw, r.headers, secret);
      expect(event).toEqual(JSON.parse(r.raw.toString("utf8")));
      expect(event.success).toBe(true);
      expect(event.data.transactionId).toMatch(/^tx_/);
      const again = await verifyWebhook(r.raw.toString("utf8"), new Headers(stringHeaders(r)), secret);
      expect(again.data.id).toBe(event.data.transactionId);
    }
    const rejected = receiver.received.map(bodyOf).find((b) => b.data.status === "rejected");
    expect(rejected?.data.type).toBe("withdrawal");
  });

  it("interop: the standardwebhooks library verifies the same deliveries with the same secret", () => {
    const wh = new Webhook(secret);
    for (const r of receiver.received) {
      expect(wh.verify(r.raw.toString("utf8"), stringHeaders(r))).toEqual(JSON.parse(r.raw.toString("utf8")));
    }
  });

  it("refuses tampered bytes in either scheme", async () => {
    for (const r of receiver.received.slice(0, 4)) {
      const text = r.raw.toString("utf8");
      const tampered = text.replace(/"amount":(\d+)/, (_, n) => `"amount":${Number(n) + 1}`);
      expect(tampered).not.toBe(text);
      expect(await reason(verifyWebhook(tampered, r.headers, secret))).toBe("invalid_signature");
      const legacyOnly = { "x-webhook-signature": r.headers["x-webhook-signature"] };
      expect(await reason(verifyWebhook(text, legacyOnly, secret, { acceptUntimestamped: true }))).toBe(
        "accepted",
      );
      expect(await reason(verifyWebhook(tampered, legacyOnly, secret, { acceptUntimestamped: true }))).toBe(
        "invalid_signature",
      );
      // One flipped bit anywhere in the bytes.
      const flipped = Buffer.from(r.raw);
      flipped[flipped.length - 2] = (flipped[flipped.length - 2] as number) ^ 1;
      expect(await reason(verifyWebhook(flipped, r.headers, secret))).toBe("invalid_signature");
      expect(() => new Webhook(secret).verify(tampered, stringHeaders(r))).toThrow();
    }
  });

  it("refuses the wrong secret in either scheme", async () => {
    const r = receiver.received[0] as Received;
    const other = `whsec_${Buffer.from("another endpoint's secret 123456").toString("base64")}`;
    expect(await reason(verifyWebhook(r.raw, r.headers, other))).toBe("invalid_signature");
    const legacyOnly = { "x-webhook-signature": r.headers["x-webhook-signature"] };
    expect(await reason(verifyWebhook(r.raw, legacyOnly, other, { acceptUntimestamped: true }))).toBe(
      "invalid_signature",
    );
    // A masked secret (what GET /webhook/secret shows) is not the secret.
    const masked = (await client.webhooks.getSecret()).webhookSecret;
    expect(masked.slice(-8)).toBe(secret.slice(-8));
    expect(masked).not.toBe(secret);
    expect(await reason(verifyWebhook(r.raw, r.headers, `whsec_${masked.slice(-8)}`))).toBe(
      "invalid_signature",
    );
  });

  it("an unset secret (process.env.X not loaded) is named as such, not 'secret is not iterable'", async () => {
    const r = receiver.received[0] as Received;
    for (const unset of [undefined, null, 42]) {
      await expect(verifyWebhook(r.raw, r.headers, unset as never)).rejects.toThrow(
        /the webhook secret is required \(got (undefined|object|number)\)/,
      );
    }
  });

  it("refuses a stale timestamp, and a fresh timestamp put on an old delivery", async () => {
    const r = receiver.received[0] as Received;
    const ts = Number(r.headers["webhook-timestamp"]);
    expect(await reason(verifyWebhook(r.raw, r.headers, secret, { now: (ts + 301) * 1000 }))).toBe(
      "stale_timestamp",
    );
    expect(await reason(verifyWebhook(r.raw, r.headers, secret, { now: (ts - 301) * 1000 }))).toBe(
      "stale_timestamp",
    );
    expect(await reason(verifyWebhook(r.raw, r.headers, secret, { now: (ts + 299) * 1000 }))).toBe(
      "accepted",
    );
    expect(
      await reason(verifyWebhook(r.raw, r.headers, secret, { now: (ts + 30) * 1000, toleranceSeconds: 10 })),
    ).toBe("stale_timestamp");
    // The replay with its timestamp refreshed: the signature covers the timestamp.
    const refreshed = { ...r.headers, "webhook-timestamp": String(Math.floor(Date.now() / 1000) + 1) };
    expect(await reason(verifyWebhook(r.raw, refreshed, secret))).toBe("invalid_signature");
    const garbage = { ...r.headers, "webhook-timestamp": "yesterday" };
    expect(await reason(verifyWebhook(r.raw, garbage, secret))).toBe("invalid_timestamp");
  });

  it("refuses missing headers; the sha256-only form only when asked to (it cannot prove freshness)", async () => {
    const r = receiver.received[0] as Received;
    expect(await reason(verifyWebhook(r.raw, {}, secret))).toBe("missing_headers");
    const { "webhook-timestamp": _ts, ...noTimestamp } = r.headers;
    expect(await reason(verifyWebhook(r.raw, noTimestamp, secret))).toBe("missing_headers");
    const legacyOnly = { "X-Webhook-Signature": r.headers["x-webhook-signature"] };
    expect(await reason(verifyWebhook(r.raw, legacyOnly, secret))).toBe("missing_headers");
    expect(await reason(verifyWebhook(r.raw, legacyOnly, secret, { acceptUntimestamped: true }))).toBe(
      "accepted",
    );
    // A Standard signature that fails is not rescued by a valid sha256 header (that would let a replay through).
    const forgedTimestamp = { ...r.headers, "webhook-timestamp": String(Math.floor(Date.now() / 1000)) };
    expect(await reason(verifyWebhook(r.raw, forgedTimestamp, secret, { acceptUntimestamped: true }))).toBe(
      "invalid_signature",
    );
  });
});

describe("webhook management through the SDK", () => {
  it("listEvents, iterateEvents over several pages, getEvent with its attempts", async () => {
    const page = await client.webhooks.listEvents({ limit: 100 });
    expect(page.pagination.total).toBeGreaterThanOrEqual(EXPECTED.length);
    const walked: string[] = [];
    for await (const e of client.webhooks.iterateEvents({ limit: 3 })) walked.push(e.webhookEventId);
    expect(walked).toEqual(page.data.map((e) => e.webhookEventId));
    const delivered = await client.webhooks.listEvents({ status: "delivered" });
    expect(delivered.data.every((e) => e.deliveryStatus === "delivered")).toBe(true);
    const detail = await client.webhooks.getEvent(page.data[0]?.webhookEventId as string);
    expect(detail.deliveryAttempts.length).toBeGreaterThanOrEqual(1);
    expect(detail.deliveryAttempts[0]?.responseStatus).toBe(200);
  });

  it("retry: one more attempt now, delivered and verifiable", async () => {
    const [event] = (await client.webhooks.listEvents({ limit: 1 })).data;
    if (!event) throw new Error("no event");
    const before = receiver.received.length;
    const after = await client.webhooks.retry(event.webhookEventId);
    expect(after.attempts).toBe(event.attempts + 1);
    expect(after.deliveryStatus).toBe("delivered");
    const r = await waitFor(() => receiver.received[before]);
    const verified = await client.webhooks.verify(r.raw, r.headers, secret);
    expect(verified.data.transactionId).toBe(event.transactionId);
    // The retry is the same event: same webhook-id as its first delivery.
    const first = receiver.received.find((x) => bodyOf(x).data.transactionId === event.transactionId);
    expect(r.headers["webhook-id"]).toBe(first?.headers["webhook-id"]);
  });

  it("rotateSecret: for the overlap, the Standard header verifies with the old and the new secret; sha256 with the new", async () => {
    const old = secret;
    const { webhookSecret: fresh } = await client.webhooks.rotateSecret();
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(old);
    const before = receiver.received.length;
    const test = await client.webhooks.test();
    expect(test).toMatchObject({ deliveryStatus: "delivered", responseStatus: 200 });
    const r = await waitFor(() => receiver.received[before]);
    expect(bodyOf(r).data.type).toBe("test");
    expect((await client.webhooks.verify(r.raw, r.headers, fresh)).data.status).toBe("test");
    expect(await reason(verifyWebhook(r.raw, r.headers, old))).toBe("accepted");
    expect(await reason(verifyWebhook(r.raw, r.headers, [old, fresh]))).toBe("accepted");
    const legacyOnly = { "x-webhook-signature": r.headers["x-webhook-signature"] };
    expect(await reason(verifyWebhook(r.raw, legacyOnly, fresh, { acceptUntimestamped: true }))).toBe(
      "accepted",
    );
    expect(await reason(verifyWebhook(r.raw, legacyOnly, old, { acceptUntimestamped: true }))).toBe(
      "invalid_signature",
    );
    new Webhook(fresh).verify(r.raw.toString("utf8"), stringHeaders(r));
    new Webhook(old).verify(r.raw.toString("utf8"), stringHeaders(r));
  });
});
