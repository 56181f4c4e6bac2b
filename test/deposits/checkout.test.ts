import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../src/ledger/verify.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { callOperation, dataOf, type RequestBody } from "../support/operation.js";
import { type Receiver, startReceiver, verifyLegacy, verifyStandard, waitFor } from "../webhooks/support.js";
import { balanceOf, hooksFor, type SandboxMerchant, sandboxMerchant } from "./support.js";

// The whole deposit flow on the sandbox simulator, through the real service: API → simulator →
// watcher → deposit logic → ledger → webhook outbox → a real local receiver.
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      // Sessions of a few seconds, so expiry is exercised in real time.
      CHECKOUT_MIN_EXPIRY_SECONDS: "1",
    },
  });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const TRC = "USDT-TRC20";

/** A session through the route's own request and response types (test/support/operation.ts). */
async function createSession(
  body: Omit<RequestBody<"createCheckoutSession">, "currencyType"> &
    Partial<RequestBody<"createCheckoutSession">>,
  headers = m.headers,
) {
  const r = await callOperation(svc.urls.sandbox, "createCheckoutSession", {
    headers,
    json: { currencyType: TRC, ...body },
  });
  return dataOf(r, 201);
}

async function pay(sessionId: string, amount?: number | string) {
  const r = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${sessionId}/pay`, {
    headers: m.headers,
    json: amount === undefined ? {} : { amount },
  });
  expect(r.status, r.text).toBe(202);
  return r.body.data as { txHash: string; address: string };
}

async function session(id: string) {
  const r = await call(svc.urls.sandbox, `/checkout/session/${id}`, { headers: m.headers });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

const waitStatus = (id: string, status: string, ms = 15_000) =>
  waitFor(async () => {
    const s = await session(id);
    return s.status === status ? s : null;
  }, ms);

async function ledgerOk() {
  const report = await verifyLedger(svc.database.db);
  expect(report.ok, JSON.stringify(report)).toBe(true);
}

describe("checkout session, sandbox simulator, end to end", () => {
  it("creates a session with every CheckoutSession field", async () => {
    const s = await createSession({ amount: 25.5, orderId: "order-1", metadata: { cart: 7 } });
    expect(s.id).toMatch(/^tx_/);
    expect(s.transactionId).toBe(s.id);
    expect(s).toMatchObject({
      status: "pending",
      amount: 25.5,
      currencyType: TRC,
      network: TRC,
      callbackUrl: null,
      orderId: "order-1",
      metadata: { cart: 7 },
      actualBalance: 0,
      blockchainTxHash: null,
      confirmedAt: null,
      checkoutUrl: `http://sandbox.stablegate.test/pay/${s.id}`,
    });
    expect(s.walletAddress).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
    const lifetime = Date.parse(s.expiresAt) - Date.parse(s.createdAt);
    expect(lifetime).toBe(30 * 60_000);
    // A fresh address per session.
    const other = await createSession({ amount: 25.5 });
    expect(other.walletAddress).not.toBe(s.walletAddress);
    expect(await session(s.id)).toEqual(s);
  });

  it("sandbox pay → confirmed webhook with every Transaction field, valid signatures, balance credited", async () => {
    const before = await balanceOf(svc, m.headers, TRC);
    const s = await createSession({ amount: 12.345678, orderId: "order-2" });
    const paid = await pay(s.id);
    const confirmed = await waitStatus(s.id, "confirmed");
    expect(confirmed.actualBalance).toBe(12.345678);
    expect(confirmed.blockchainTxHash).toBe(paid.txHash);
    expect(confirmed.confirmedAt).not.toBeNull();

    const [hook, ...more] = await waitFor(() => {
      const h = hooksFor(receiver, s.id);
      return h.length > 0 ? h : null;
    });
    expect(more).toHaveLength(0);
    expect(hook?.body.success).toBe(true);
    expect(typeof hook?.body.message).toBe("string");
    expect(hook?.body.data).toMatchObject({
      type: "deposit",
      transactionId: s.id,
      id: s.id,
      clientId: m.merchant.id,
      amount: 12.345678,
      fee: 0,
      netAmount: 12.345678,
      actualBalance: 12.345678,
      currencyType: TRC,
      network: TRC,
      status: "confirmed",
      createdAt: s.createdAt,
      confirmedAt: confirmed.confirmedAt,
      blockchainTxHash: paid.txHash,
      walletAddress: s.walletAddress,
    });
    const raw = hook?.r.raw as Buffer;
    expect(verifyLegacy(m.webhookSecret, raw, hook?.r.headers["x-webhook-signature"] as string)).toBe(true);
    expect(verifyStandard(m.webhookSecret, raw, hook?.r.headers ?? {})).toBe(true);
    expect(hook?.r.headers["x-transaction-id"]).toBe(s.id);

    const after = await balanceOf(svc, m.headers, TRC);
    expect(after.available).toBeCloseTo(before.available + 12.345678, 6);
    await ledgerOk();
  });

  it("overpayment: confirmed, the whole actualBalance credited", async () => {
    const before = await balanceOf(svc, m.headers, TRC);
    const s = await createSession({ amount: 10 });
    await pay(s.id, 15.5);
    const done = await waitStatus(s.id, "confirmed");
    expect(done.actualBalance).toBe(15.5);
    expect((await balanceOf(svc, m.headers, TRC)).available).toBeCloseTo(before.available + 15.5, 6);
  });

  it("two partial payments that reach the amount confirm the session", async () => {
    const s = await createSession({ amount: 10 });
    await pay(s.id, 4);
    await waitFor(async () => (await session(s.id)).actualBalance === 4);
    expect((await session(s.id)).status).toBe("pending");
    const second = await pay(s.id, 6);
    const done = await waitStatus(s.id, "confirmed");
    expect(done.actualBalance).toBe(10);
    expect(done.blockchainTxHash).toBe(second.txHash);
  });

  it("partial payment then expiry → failed with actualBalance; the partial amount is credited", async () => {
    const before = await balanceOf(svc, m.headers, TRC);
    const s = await createSession({ amount: 20, expiresInMinutes: 3 / 60 });
    await pay(s.id, 7.25);
    await waitFor(async () => (await session(s.id)).actualBalance === 7.25);
    const failed = await waitStatus(s.id, "failed");
    expect(failed.actualBalance).toBe(7.25);
    expect(failed.confirmedAt).toBeNull();
    const hooks = await waitFor(() => {
      const h = hooksFor(receiver, s.id);
      return h.length > 0 ? h : null;
    });
    expect(hooks.map((h) => h.body.data.status)).toEqual(["failed"]);
    expect(hooks[0]?.body.data.actualBalance).toBe(7.25);
    expect((await balanceOf(svc, m.headers, TRC)).available).toBeCloseTo(before.available + 7.25, 6);
    await ledgerOk();
  });

  it("late payment after expiry → a new confirmed deposit linked to the session", async () => {
    const s = await createSession({ amount: 5, expiresInMinutes: 1 / 60, orderId: "late-1" });
    await waitStatus(s.id, "failed");
    const before = await balanceOf(svc, m.headers, TRC);
    const paid = await pay(s.id);
    const late = await waitFor(async () => {
      const r = await call(svc.urls.sandbox, `/api/v1/public/transactions?search=${paid.txHash}`, {
        headers: m.headers,
      });
      return r.body.data?.[0];
    });
    expect(late).toMatchObject({
      type: "deposit",
      status: "confirmed",
      amount: 5,
      actualBalance: 5,
      checkoutSessionId: s.id,
      orderId: "late-1",
      walletAddress: s.walletAddress,
      blockchainTxHash: paid.txHash,
    });
    expect(late.id).not.toBe(s.id);
    // The session itself keeps its outcome.
    expect((await session(s.id)).status).toBe("failed");
    const hook = await waitFor(() => hooksFor(receiver, late.id)[0]);
    expect(hook.body.data.checkoutSessionId).toBe(s.id);
    expect((await balanceOf(svc, m.headers, TRC)).available).toBeCloseTo(before.available + 5, 6);
  });

  it("callbackUrl receives the session's deposit webhooks instead of webhookUrl", async () => {
    const s = await createSession({ amount: 1, callbackUrl: receiver.url("/session-callback") });
    expect(s.callbackUrl).toBe(receiver.url("/session-callback"));
    await pay(s.id);
    const hook = await waitFor(() => hooksFor(receiver, s.id)[0]);
    expect(hook.r.path).toBe("/session-callback");
  });

  it("works on ERC20 too", async () => {
    const s = await createSession({ amount: 3, currencyType: "USDT-ERC20" });
    expect(s.walletAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
    await pay(s.id);
    const done = await waitStatus(s.id, "confirmed");
    expect(done.network).toBe("USDT-ERC20");
  });
});

describe("Idempotency-Key on POST /checkout/session", () => {
  it("replays the same response for the same key and body; 422 for another body", async () => {
    const key = `idem-${Date.now()}`;
    const headers = { ...m.headers, "idempotency-key": key };
    const first = await call(svc.urls.sandbox, "/checkout/session", {
      headers,
      json: { amount: 9, currencyType: TRC },
    });
    expect(first.status, first.text).toBe(201);
    // Same body with the keys in another order is the same request.
    const again = await call(svc.urls.sandbox, "/checkout/session", {
      headers,
      json: { currencyType: TRC, amount: 9 },
    });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const other = await call(svc.urls.sandbox, "/checkout/session", {
      headers,
      json: { amount: 10, currencyType: TRC },
    });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe("IDEMPOTENCY_MISMATCH");
    // Another merchant's identical key is its own.
    const n = await sandboxMerchant(svc, receiver);
    const theirs = await call(svc.urls.sandbox, "/checkout/session", {
      headers: { ...n.headers, "idempotency-key": key },
      json: { amount: 9, currencyType: TRC },
    });
    expect(theirs.status).toBe(201);
    expect(theirs.body.data.id).not.toBe(first.body.data.id);
  });

  it("concurrent requests with one key create one session", async () => {
    const headers = { ...m.headers, "idempotency-key": `race-${Date.now()}` };
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        call(svc.urls.sandbox, "/checkout/session", { headers, json: { amount: 2, currencyType: TRC } }),
      ),
    );
    const created = results.filter((r) => r.status === 201);
    const conflicts = results.filter((r) => r.status === 409);
    expect(created.length + conflicts.length).toBe(8);
    expect(new Set(created.map((r) => r.body.data.id)).size).toBe(1);
    for (const c of conflicts) expect(c.body.error.code).toBe("IDEMPOTENCY_CONFLICT");
  });

  it("a failed request stores nothing: the key can be used again", async () => {
    const headers = { ...m.headers, "idempotency-key": `fail-${Date.now()}` };
    const bad = await call(svc.urls.sandbox, "/checkout/session", {
      headers,
      json: { amount: -1, currencyType: TRC },
    });
    expect(bad.status).toBe(400);
    const good = await call(svc.urls.sandbox, "/checkout/session", {
      headers,
      json: { amount: 1, currencyType: TRC },
    });
    expect(good.status).toBe(201);
  });

  it("rejects a malformed key", async () => {
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      headers: { ...m.headers, "idempotency-key": "has space" },
      json: { amount: 1, currencyType: TRC },
    });
    expect(r.status).toBe(400);
    expect(r.body.error.details.fields[0].field).toBe("Idempotency-Key");
  });
});

describe("POST /wallet/generate", () => {
  it("a permanent address: each payment is its own confirmed deposit with its webhook", async () => {
    const r = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: m.headers,
      json: { currencyType: TRC, label: "alice main", externalUserId: "user-42" },
    });
    expect(r.status, r.text).toBe(201);
    const w = r.body.data;
    expect(w).toMatchObject({
      currencyType: TRC,
      network: TRC,
      label: "alice main",
      externalUserId: "user-42",
    });
    expect(w.id).toMatch(/^wal_/);
    for (const amount of [3, 4.5]) {
      const p = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${w.address}/pay`, {
        headers: m.headers,
        json: { amount, currencyType: TRC },
      });
      expect(p.status, p.text).toBe(202);
    }
    const deposits = await waitFor(async () => {
      const list = await call(
        svc.urls.sandbox,
        `/api/v1/public/transactions?search=user-42&sortBy=amount&order=asc`,
        {
          headers: m.headers,
        },
      );
      return list.body.data.length === 2 ? list.body.data : null;
    });
    expect(deposits.map((d: { amount: number }) => d.amount)).toEqual([3, 4.5]);
    for (const d of deposits) {
      expect(d).toMatchObject({
        type: "deposit",
        status: "confirmed",
        walletAddress: w.address,
        externalUserId: "user-42",
      });
      await waitFor(() => hooksFor(receiver, d.id)[0]);
    }
  });

  it("Idempotency-Key returns the same address", async () => {
    const headers = { ...m.headers, "idempotency-key": `wal-${Date.now()}` };
    const a = await call(svc.urls.sandbox, "/wallet/generate", { headers, json: { currencyType: TRC } });
    const b = await call(svc.urls.sandbox, "/wallet/generate", { headers, json: { currencyType: TRC } });
    expect(a.status).toBe(201);
    expect(b.body.data.address).toBe(a.body.data.address);
  });

  it("the sandbox faucet pays only the merchant's own deposit addresses", async () => {
    const stranger = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
    const r = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${stranger}/pay`, {
      headers: m.headers,
      json: { amount: 1, currencyType: TRC },
    });
    expect(r.status).toBe(404);
    const bad = await call(svc.urls.sandbox, "/api/v1/sandbox/wallet/not-an-address/pay", {
      headers: m.headers,
      json: { amount: 1, currencyType: TRC },
    });
    expect(bad.status).toBe(400);
  });
});
