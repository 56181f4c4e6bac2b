import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../src/ledger/verify.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, sleep, startReceiver, waitFor } from "../webhooks/support.js";
import { balanceOf, hooksFor, type SandboxMerchant, sandboxMerchant } from "./support.js";

// Wrong-network payments (README.md#wrong-network-payments) on the sandbox simulator: an EVM deposit
// address is the same on every EVM network, so it is watched on every enabled EVM currency type; a
// payment that arrives as another one is its own confirmed deposit in that currency type, flagged
// `wrongNetwork`, and never counts toward the session. (test/chains/networks-e2e.test.ts does the
// same on two anvils with their own chain ids.)

let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      CURRENCY_TYPES: "USDT-TRC20,USDT-ERC20,USDC-BASE,USDT-BEP20",
    },
  });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function createSession(currencyType: string, amount: number) {
  const r = await call(svc.urls.sandbox, "/checkout/session", {
    headers: m.headers,
    json: { amount, currencyType, orderId: `wn-${Date.now()}`, metadata: { cart: 1 } },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data as { id: string; walletAddress: string; status: string };
}

async function session(id: string) {
  const r = await call(svc.urls.sandbox, `/checkout/session/${id}`, { headers: m.headers });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

/** Pays `address` as `currencyType` from the sandbox faucet (whatever the address was made for). */
async function payAs(address: string, currencyType: string, amount: number) {
  return call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${address}/pay`, {
    headers: m.headers,
    json: { amount, currencyType },
  });
}

/** The deposit webhooks of the merchant that name `sessionId` as their session or are its own. */
function sessionHooks(sessionId: string) {
  return receiver.received
    .map((r) => JSON.parse(r.raw.toString("utf8")))
    .filter((b) => b.data?.transactionId === sessionId || b.data?.checkoutSessionId === sessionId);
}

async function ledgerOk() {
  const report = await verifyLedger(svc.database.db);
  expect(report.ok, JSON.stringify(report)).toBe(true);
}

describe("a payment on another EVM network than the session's", () => {
  it("is its own confirmed deposit in the currency type it arrived as, flagged wrongNetwork; the session is untouched", async () => {
    const s = await createSession("USDT-ERC20", 10);
    const paid = await payAs(s.walletAddress, "USDC-BASE", 3);
    expect(paid.status, paid.text).toBe(202);

    const hook = await waitFor(
      () => sessionHooks(s.id).find((b) => b.data.wrongNetwork === true) ?? null,
      15_000,
    );
    expect(hook.data).toMatchObject({
      type: "deposit",
      status: "confirmed",
      currencyType: "USDC-BASE",
      network: "USDC-BASE",
      amount: 3,
      actualBalance: 3,
      walletAddress: s.walletAddress,
      checkoutSessionId: s.id,
      orderId: expect.stringMatching(/^wn-/),
      metadata: { cart: 1 },
      wrongNetwork: true,
    });
    expect(hook.data.transactionId).not.toBe(s.id);

    // Never toward the session: still open, nothing received or detected in its own currency type.
    const open = await session(s.id);
    expect(open).toMatchObject({ status: "pending", actualBalance: 0, detectedAmount: 0 });
    expect(await balanceOf(svc, m.headers, "USDC-BASE")).toMatchObject({ available: 3 });
    expect(await balanceOf(svc, m.headers, "USDT-ERC20")).toMatchObject({ available: 0 });

    // The transaction reads back with the flag.
    const tx = await call(svc.urls.sandbox, `/api/v1/public/transactions/${hook.data.transactionId}`, {
      headers: m.headers,
    });
    expect(tx.status, tx.text).toBe(200);
    expect(tx.body.data).toMatchObject({
      currencyType: "USDC-BASE",
      wrongNetwork: true,
      checkoutSessionId: s.id,
    });

    // The session's own payment confirms it as usual: one webhook each, only the second flagged.
    const own = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.id}/pay`, {
      headers: m.headers,
      json: {},
    });
    expect(own.status, own.text).toBe(202);
    await waitFor(async () => ((await session(s.id)).status === "confirmed" ? true : null), 15_000);
    await waitFor(() => (sessionHooks(s.id).length >= 2 ? true : null), 15_000);
    await sleep(1_000); // long enough for a duplicate to show
    const hooks = sessionHooks(s.id);
    expect(
      hooks.map((b) => [b.data.currencyType, b.data.status, b.data.wrongNetwork ?? false]).sort(),
    ).toEqual([
      ["USDC-BASE", "confirmed", true],
      ["USDT-ERC20", "confirmed", false],
    ]);
    expect(hooksFor(receiver, s.id).map((h) => h.body.data)).toEqual([
      expect.not.objectContaining({ wrongNetwork: expect.anything() }),
    ]);
    expect(await balanceOf(svc, m.headers, "USDT-ERC20")).toMatchObject({ available: 10 });
    expect(await balanceOf(svc, m.headers, "USDC-BASE")).toMatchObject({ available: 3 });
    await ledgerOk();
  });

  it("a cheap network cannot pay an order: the full amount on BNB Smart Chain to an Ethereum session leaves it open", async () => {
    const s = await createSession("USDT-ERC20", 20);
    expect((await payAs(s.walletAddress, "USDT-BEP20", 20)).status).toBe(202);
    await waitFor(() => sessionHooks(s.id).find((b) => b.data.currencyType === "USDT-BEP20") ?? null, 15_000);
    expect(await session(s.id)).toMatchObject({ status: "pending", actualBalance: 0 });
    expect(await balanceOf(svc, m.headers, "USDT-BEP20")).toMatchObject({ available: 20 });
    await ledgerOk();
  });

  it("a /wallet/generate address paid on another network: a deposit of that wallet in the other currency type", async () => {
    const w = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: m.headers,
      json: { currencyType: "USDC-BASE", externalUserId: "user-42" },
    });
    expect(w.status, w.text).toBe(201);
    const address = w.body.data.address as string;
    expect((await payAs(address, "USDT-ERC20", 4)).status).toBe(202);
    const hook = await waitFor(
      () =>
        receiver.received
          .map((r) => JSON.parse(r.raw.toString("utf8")))
          .find((b) => b.data?.walletAddress === address && b.data?.currencyType === "USDT-ERC20") ?? null,
      15_000,
    );
    expect(hook.data).toMatchObject({
      status: "confirmed",
      amount: 4,
      externalUserId: "user-42",
      checkoutSessionId: null,
      wrongNetwork: true,
    });
    // Its own network's payments are ordinary deposits of the wallet.
    expect((await payAs(address, "USDC-BASE", 2)).status).toBe(202);
    const own = await waitFor(
      () =>
        receiver.received
          .map((r) => JSON.parse(r.raw.toString("utf8")))
          .find((b) => b.data?.walletAddress === address && b.data?.currencyType === "USDC-BASE") ?? null,
      15_000,
    );
    expect(own.data.wrongNetwork).toBeUndefined();
    await ledgerOk();
  });

  it("paying an address as a currency type this deployment does not enable is a 400 on currencyType", async () => {
    const s = await createSession("USDT-ERC20", 5);
    const r = await payAs(s.walletAddress, "USDC-ARBITRUM", 5);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(["currencyType"]);
  });

  it("a TRON address has no twin on EVM networks: paying it as an EVM currency type is a 400 on the address", async () => {
    const s = await createSession("USDT-TRC20", 5);
    const r = await payAs(s.walletAddress, "USDT-ERC20", 5);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
  });
});

describe("the hosted page", () => {
  it("of an EVM session names the networks a payment is still credited on, instead of 'cannot be recovered' for them", async () => {
    const s = await createSession("USDC-BASE", 7);
    const page = await call(svc.urls.sandbox, `/pay/${s.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("<h1>Pay with USDC</h1>");
    expect(page.text).toContain("7 USDC");
    expect(page.text).toContain(
      "Send only USDC on the Base network to this address. USDT on Ethereum (ERC-20), USDT on BNB Smart Chain (BEP-20) sent to it still reaches the merchant but does not pay this order; other tokens or networks cannot be recovered.",
    );
  });

  it("of a TRON session keeps the plain warning (nothing else is watched there)", async () => {
    const s = await createSession("USDT-TRC20", 7);
    const page = await call(svc.urls.sandbox, `/pay/${s.id}`);
    expect(page.text).toContain(
      "Send only USDT on the TRON (TRC-20) network to this address. Other tokens or networks cannot be recovered.",
    );
  });
});
