import type { TObject, TSchema } from "@sinclair/typebox";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_FAILURE_ADDRESSES } from "../../src/domain/currency.js";
import {
  WebhookDeliveries,
  WebhookDelivery,
  WebhookDeliveryHeaders,
} from "../../src/http/schemas/webhook-delivery.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { balance, type Funded, fundedMerchant } from "../withdrawals/support.js";
import {
  type Received,
  type Receiver,
  sampleTransaction,
  startReceiver,
  verifyLegacy,
  verifyStandard,
  waitFor,
} from "./support.js";

// The schema of the delivery body (src/http/schemas/webhook-delivery.ts, published in the OpenAPI
// document's `webhooks`) against the bytes a real receiver captured: every type and outcome the
// server sends, no field missing, none undeclared, and the stored event payload identical to them.

let svc: TestService;
let receiver: Receiver;
let m: Funded;
let secret: string;
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";

const ajv = new Ajv.default({ allErrors: true, strict: false });
addFormats.default(ajv);
const validateAny = ajv.compile(WebhookDelivery);

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      CHECKOUT_MIN_EXPIRY_SECONDS: "1",
      // Two EVM currency types: a payment as the other one is a wrong-network deposit.
      CURRENCY_TYPES: "USDT-TRC20,USDT-ERC20,USDC-BASE",
    },
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 3000 });
  const rotated = await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", {
    method: "POST",
    headers: m.api,
  });
  expect(rotated.status, rotated.text).toBe(200);
  secret = rotated.body.data.webhookSecret;
}, 90_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

interface Captured {
  received: Received;
  body: any;
}

function deliveriesOf(transactionId: string): Captured[] {
  return receiver.received
    .map((received) => ({ received, body: JSON.parse(received.raw.toString("utf8")) }))
    .filter((c) => c.body.data?.transactionId === transactionId);
}

async function delivery(transactionId: string, status: string): Promise<Captured> {
  return waitFor(() => deliveriesOf(transactionId).find((c) => c.body.data.status === status), 20_000);
}

const keys = (schema: TSchema) => Object.keys((schema as TObject).properties).sort();
const requiredKeys = (schema: TSchema) => [...((schema as TObject).required ?? [])].sort();

/** `body` has every required field of `schema` and no field it does not declare. */
function expectExactly(body: Record<string, unknown>, schema: TSchema) {
  const present = Object.keys(body).sort();
  expect(
    present.filter((k) => !keys(schema).includes(k)),
    "undeclared fields",
  ).toEqual([]);
  expect(
    requiredKeys(schema).filter((k) => !present.includes(k)),
    "missing fields",
  ).toEqual([]);
}

/** The checks every captured delivery must pass; returns its `data`. */
async function expectConforming(c: Captured, type: keyof typeof WebhookDeliveries) {
  const schema = WebhookDeliveries[type];
  const validate = ajv.compile(schema);
  expect(validate(c.body), JSON.stringify(validate.errors)).toBe(true);
  expect(validateAny(c.body), JSON.stringify(validateAny.errors)).toBe(true);
  // Exactly the declared fields, at both levels: a field added to the payload without the schema
  // (or the reverse) fails here.
  // (Optional fields, such as a deposit's `wrongNetwork`, may be absent.)
  expectExactly(c.body, schema);
  expectExactly(c.body.data, schema.properties.data);
  const headers = ajv.compile(WebhookDeliveryHeaders);
  const sent = Object.fromEntries(
    Object.keys(WebhookDeliveryHeaders.properties)
      .filter((name) => c.received.headers[name] !== undefined)
      .map((name) => [name, c.received.headers[name]]),
  );
  expect(headers(sent), JSON.stringify(headers.errors)).toBe(true);
  expect(c.received.headers["x-transaction-id"]).toBe(c.body.data.transactionId);
  // Signed as documented, with the rotated secret.
  expect(verifyLegacy(secret, c.received.raw, c.received.headers["x-webhook-signature"] as string)).toBe(
    true,
  );
  expect(verifyStandard(secret, c.received.raw, c.received.headers)).toBe(true);
  // The event log's payload is the body delivered, field for field.
  const id = c.received.headers["webhook-id"] as string;
  const event = await call(svc.urls.sandbox, `/api/v1/webhook/events/${id}`, { headers: m.api });
  expect(event.status, event.text).toBe(200);
  expect(event.body.data.payload).toEqual(c.body);
  expect(c.body.data.environment).toBe("sandbox");
  return c.body.data;
}

const withdraw = (json: Record<string, unknown>) =>
  call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers: m.api,
    json: { currencyType: TRC, walletAddress: TRON_TO, ...json },
  });

describe("webhook deliveries match the published schema", () => {
  it("deposit confirmed carries the session's metadata", async () => {
    const metadata = { cartId: "c-42", items: [1, 2], nested: { ok: true } };
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 12.5, currencyType: TRC, orderId: "order-shape-1", metadata },
    });
    expect(s.status, s.text).toBe(201);
    const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      method: "POST",
      headers: m.api,
    });
    expect(pay.status, pay.text).toBe(202);
    const data = await expectConforming(await delivery(s.body.data.id, "confirmed"), "deposit");
    expect(data).toMatchObject({
      type: "deposit",
      status: "confirmed",
      amount: 12.5,
      orderId: "order-shape-1",
      metadata,
      rejectionReason: null,
      blockchainTxHash: pay.body.data.blockchainTxHash,
    });
  });

  it("a deposit on the wrong network carries wrongNetwork: true, the session's id and metadata", async () => {
    const metadata = { cartId: "c-wn" };
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 5, currencyType: "USDT-ERC20", orderId: "order-shape-wn", metadata },
    });
    expect(s.status, s.text).toBe(201);
    const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${s.body.data.walletAddress}/pay`, {
      headers: m.api,
      json: { amount: 2, currencyType: "USDC-BASE" },
    });
    expect(pay.status, pay.text).toBe(202);
    const c = await waitFor(
      () =>
        receiver.received
          .map((received) => ({ received, body: JSON.parse(received.raw.toString("utf8")) }))
          .find((x) => x.body.data?.checkoutSessionId === s.body.data.id),
      20_000,
    );
    const data = await expectConforming(c, "deposit");
    expect(data).toMatchObject({
      status: "confirmed",
      currencyType: "USDC-BASE",
      amount: 2,
      orderId: "order-shape-wn",
      metadata,
      wrongNetwork: true,
    });
  });

  it("deposit failed (expired short) and its late payment both carry the metadata", async () => {
    const metadata = { kind: "partial" };
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 20, currencyType: TRC, expiresInMinutes: 2 / 60, metadata },
    });
    expect(s.status, s.text).toBe(201);
    const partial = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: m.api,
      json: { amount: 3 },
    });
    expect(partial.status, partial.text).toBe(202);
    const failed = await expectConforming(await delivery(s.body.data.id, "failed"), "deposit");
    expect(failed).toMatchObject({ status: "failed", actualBalance: 3, metadata });
    const late = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: m.api,
      json: { amount: 4 },
    });
    expect(late.status, late.text).toBe(202);
    const lateHook = await waitFor(
      () =>
        receiver.received
          .map((received) => ({ received, body: JSON.parse(received.raw.toString("utf8")) }))
          .find((c) => c.body.data?.checkoutSessionId === s.body.data.id),
      20_000,
    );
    const lateData = await expectConforming(lateHook, "deposit");
    expect(lateData).toMatchObject({ status: "confirmed", amount: 4, metadata });
  });

  it("withdrawal completed and failed (the test failure address)", async () => {
    const ok = await withdraw({ amount: 10, reference: "shape-ok" });
    expect(ok.status, ok.text).toBe(201);
    const completed = await expectConforming(await delivery(ok.body.data.id, "completed"), "withdrawal");
    expect(completed).toMatchObject({ reference: "shape-ok", metadata: null, rejectionReason: null });
    const bad = await withdraw({ amount: 11, walletAddress: TEST_FAILURE_ADDRESSES[TRC] });
    expect(bad.status, bad.text).toBe(201);
    const failed = await expectConforming(await delivery(bad.body.data.id, "failed"), "withdrawal");
    expect(failed).toMatchObject({ status: "failed", rejectionReason: null });
  });

  it("withdrawal pending then rejected carries the rejection reason", async () => {
    // Above the default auto-approve threshold (1,000 USDT): held for approval.
    const w = await withdraw({ amount: 1500 });
    expect(w.status, w.text).toBe(201);
    const pending = await expectConforming(await delivery(w.body.data.id, "pending"), "withdrawal");
    expect(pending.rejectionReason).toBeNull();
    const r = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${w.body.data.id}/reject`, {
      headers: m.api,
      json: { reason: "KYC mismatch" },
    });
    expect(r.status, r.text).toBe(200);
    const rejected = await expectConforming(await delivery(w.body.data.id, "rejected"), "withdrawal");
    expect(rejected).toMatchObject({ status: "rejected", rejectionReason: "KYC mismatch", metadata: null });
    expect((await balance(svc, m.api, TRC)).held).toBe(0);
  });

  it("payout completed", async () => {
    const sent = await call(svc.urls.sandbox, "/api/v1/auth/otp", {
      headers: m.bearer,
      json: { purpose: "payout" },
    });
    expect(sent.status, sent.text).toBe(200);
    const mail = await call(svc.urls.sandbox, "/api/v1/dashboard/dev/mail?limit=1", { headers: m.bearer });
    const otp = /\b(\d{6})\b/.exec(mail.body.data[0].text)?.[1];
    const p = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 5, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(p.status, p.text).toBe(201);
    const data = await expectConforming(await delivery(p.body.data.id, "completed"), "payout");
    expect(data).toMatchObject({ type: "payout", metadata: null, rejectionReason: null });
  });

  it("test delivery has the same fields as real ones", async () => {
    const t = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      method: "POST",
      headers: { ...m.api, "content-type": "application/json" },
    });
    expect(t.status, t.text).toBe(200);
    expect(t.body.data.deliveryStatus).toBe("delivered");
    const c = await waitFor(() =>
      receiver.received
        .map((received) => ({ received, body: JSON.parse(received.raw.toString("utf8")) }))
        .find((x) => x.received.headers["webhook-id"] === t.body.data.webhookEventId),
    );
    expect(c.received.headers["x-webhook-test"]).toBe("true");
    const data = await expectConforming(c, "test");
    expect(data).toMatchObject({ type: "test", status: "test", amount: 0 });
    // Same data fields as a real delivery: a receiver parses both with one code path.
    expect(keys(WebhookDeliveries.test.properties.data)).toEqual(
      keys(WebhookDeliveries.deposit.properties.data),
    );
  });

  it("a production event says production (the outbox sets the event's environment)", async () => {
    // No production chain in tests: the event goes through the real outbox and is read back from
    // the production listener's event log (no URL set: recorded as failed, body stored as sent).
    const merchant = await svc.createMerchant();
    const k = keysOf(merchant, "production");
    const transactionId = `tx_shape_prod_${Date.now()}`;
    const { webhookEventId } = await svc.database.db.transaction().execute((trx) =>
      enqueueWebhookEvent(trx, {
        merchantId: merchant.id,
        environment: "production",
        transactionId,
        type: "deposit",
        transactionStatus: "confirmed",
        data: { ...sampleTransaction(merchant.id, transactionId), environment: "sandbox" },
      }),
    );
    const r = await call(svc.urls.production, `/api/v1/webhook/events/${webhookEventId}`, {
      headers: { apikey: k.apiKey, "x-api-secret": k.apiSecret },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.payload.data.environment).toBe("production");
    expect(r.body.data.payload.data.transactionId).toBe(transactionId);
  });
});
