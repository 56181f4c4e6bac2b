import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TEST_FAILURE_ADDRESSES } from "../../src/domain/currency.js";
import { updateSettings } from "../../src/merchants/index.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { balance, expectLedgerOk, type Funded, fundedMerchant, hookStatuses } from "./support.js";

// The withdrawal and payout lifecycles (docs/api-reference.md#withdrawals), executed on the sandbox simulator through the real
// sending pipeline: statuses, balances (available/held) and the exact webhook sequence.
let svc: TestService;
let receiver: Receiver;
let m: Funded;
const TRC = "USDT-TRC20";
const ERC = "USDT-ERC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const EVM_TO = "0x8ba1f109551bD432803012645Ac136ddd64DBA72";

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 5000, [ERC]: 500 });
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

// `stablegate ledger verify` after every test: every posting balances, every balance matches its journal.
afterEach(async () => {
  await expectLedgerOk(svc);
});

const withdraw = (json: Record<string, unknown>, headers: Record<string, string> = m.api) =>
  call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers,
    json: { currencyType: TRC, walletAddress: TRON_TO, ...json },
  });

async function settled(id: string, path = "withdrawal-requests") {
  return waitFor(async () => {
    const r = await call(svc.urls.sandbox, `/api/v1/public/${path}/${id}`, { headers: m.api });
    return r.body.data.status !== "processing" && r.body.data.status !== "pending" ? r.body.data : null;
  }, 20_000);
}

async function hooksSettle(id: string, n: number) {
  await waitFor(() => hookStatuses(receiver, id).length >= n, 10_000);
  // Give a wrong extra webhook the time to show up before asserting the exact sequence.
  await new Promise((r) => setTimeout(r, 300));
  return hookStatuses(receiver, id);
}

describe("withdrawal requests", () => {
  it("under the threshold with autoWithdraw: executed at once → completed, one webhook, hold settled", async () => {
    const before = await balance(svc, m.api, TRC);
    const r = await withdraw({ amount: 100 });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.status).toBe("processing");
    const done = await settled(r.body.data.id);
    expect(done.status).toBe("completed");
    expect(done.blockchainTxHash).toMatch(/^[0-9a-f]{64}$/i);
    expect(done.confirmedAt).not.toBeNull();
    expect(await hooksSettle(done.id, 1)).toEqual(["completed"]);
    expect(await balance(svc, m.api, TRC)).toEqual({ available: before.available - 100, held: before.held });
    await expectLedgerOk(svc);
  });

  it("to the test failure address: failed, one webhook, balance restored", async () => {
    const before = await balance(svc, m.api, TRC);
    const r = await withdraw({ amount: 30, walletAddress: TEST_FAILURE_ADDRESSES[TRC] });
    expect(r.status, r.text).toBe(201);
    const done = await settled(r.body.data.id);
    expect(done.status).toBe("failed");
    expect(await hooksSettle(done.id, 1)).toEqual(["failed"]);
    expect(await balance(svc, m.api, TRC)).toEqual(before);
    await expectLedgerOk(svc);
  });

  it("over the threshold: pending, then approved → completed (two webhooks)", async () => {
    const before = await balance(svc, m.api, TRC);
    const r = await withdraw({ amount: 1500 });
    expect(r.body.data.status).toBe("pending");
    const ok = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}/approve`, {
      headers: m.api,
      json: {},
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.status).toBe("processing");
    const done = await settled(r.body.data.id);
    expect(done.status).toBe("completed");
    expect(await hooksSettle(done.id, 2)).toEqual(["pending", "completed"]);
    expect(await balance(svc, m.api, TRC)).toEqual({ available: before.available - 1500, held: before.held });
  });

  it("approved from the dashboard to the failure address: pending, failed, balance restored", async () => {
    const before = await balance(svc, m.api, ERC);
    const r = await withdraw({ amount: 1200, currencyType: ERC, walletAddress: TEST_FAILURE_ADDRESSES[ERC] });
    expect(r.status, r.text).toBe(422); // 500 USDT-ERC20 only
    const small = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
      method: "PATCH",
      headers: m.bearer,
      json: { autoWithdraw: false },
    });
    expect(small.status, small.text).toBe(200);
    const p = await withdraw({ amount: 50, currencyType: ERC, walletAddress: TEST_FAILURE_ADDRESSES[ERC] });
    expect(p.body.data.status).toBe("pending");
    const ok = await call(
      svc.urls.sandbox,
      `/api/v1/dashboard/withdrawal-requests/${p.body.data.id}/approve`,
      {
        headers: m.bearer,
        json: {},
      },
    );
    expect(ok.status, ok.text).toBe(200);
    const done = await settled(p.body.data.id);
    expect(done.status).toBe("failed");
    expect(await hooksSettle(done.id, 2)).toEqual(["pending", "failed"]);
    expect(await balance(svc, m.api, ERC)).toEqual(before);
    await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: true }, new Date());
  });

  it("100 parallel approves and rejects on one pending request → one winner, one final webhook", async () => {
    const r = await withdraw({ amount: 2000 });
    const id = r.body.data.id;
    expect(r.body.data.status).toBe("pending");
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${id}/${i % 2 ? "approve" : "reject"}`, {
          headers: m.api,
          json: {},
        }),
      ),
    );
    const winners = results.filter((x) => x.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((x) => x.status === 409)).toHaveLength(99);
    const final = winners[0]?.body.data.status === "rejected" ? "rejected" : "completed";
    if (final === "completed") await settled(id);
    expect(await hooksSettle(id, 2)).toEqual(["pending", final]);
    await expectLedgerOk(svc);
  });
});

describe("payouts (dashboard, OTP)", () => {
  async function payoutOtp(): Promise<string> {
    const sent = await call(svc.urls.sandbox, "/api/v1/auth/otp", {
      headers: m.bearer,
      json: { purpose: "payout" },
    });
    expect(sent.status, sent.text).toBe(200);
    const mail = await call(svc.urls.sandbox, "/api/v1/dashboard/dev/mail?limit=1", { headers: m.bearer });
    const code = /\b(\d{6})\b/.exec(mail.body.data[0].text)?.[1];
    if (!code) throw new Error("no OTP in the mail");
    return code;
  }

  it("OTP → held → executed → completed, one webhook; the OTP is single use", async () => {
    const before = await balance(svc, m.api, TRC);
    const otp = await payoutOtp();
    const r = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 250, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(r.status, r.text).toBe(201);
    const done = await waitFor(async () => {
      const g = await call(svc.urls.sandbox, `/api/v1/public/payout/get?id=${r.body.data.id}`, {
        headers: m.api,
      });
      return g.body.data.status === "completed" ? g.body.data : null;
    }, 20_000);
    expect(done).toMatchObject({ amount: 250, fee: 1, netAmount: 249, walletAddress: TRON_TO });
    expect(await hooksSettle(done.id, 1)).toEqual(["completed"]);
    expect(await balance(svc, m.api, TRC)).toEqual({ available: before.available - 250, held: before.held });
    const reused = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 5, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(reused.status).toBe(400);
    const list = await call(svc.urls.sandbox, "/api/v1/public/payout/get", { headers: m.api });
    expect(list.body.pagination.total).toBeGreaterThanOrEqual(1);
  });

  it("a payout retried with the same Idempotency-Key replays its answer (the spent OTP is not checked again)", async () => {
    const before = await balance(svc, m.api, TRC);
    const otp = await payoutOtp();
    const send = () =>
      call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
        headers: { ...m.bearer, "idempotency-key": `payout-retry-${otp}` },
        json: { amount: 7, currencyType: TRC, walletAddress: TRON_TO, otp },
      });
    const first = await send();
    expect(first.status, first.text).toBe(201);
    const retry = await send();
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.text).toBe(first.text);
    await settled(first.body.data.id, "transactions");
    // One payout, paid once.
    expect(await balance(svc, m.api, TRC)).toEqual({ available: before.available - 7, held: before.held });
    // A new request (another body) with the spent code is still refused.
    const other = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: { ...m.bearer, "idempotency-key": `payout-other-${otp}` },
      json: { amount: 8, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(other.status).toBe(400);
  });

  it("to the failure address: failed, balance restored, one webhook", async () => {
    const before = await balance(svc, m.api, TRC);
    const r = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: {
        amount: 10,
        currencyType: TRC,
        walletAddress: TEST_FAILURE_ADDRESSES[TRC],
        otp: await payoutOtp(),
      },
    });
    expect(r.status, r.text).toBe(201);
    const done = await settled(r.body.data.id, "transactions");
    expect(done.status).toBe("failed");
    expect(await hooksSettle(done.id, 1)).toEqual(["failed"]);
    expect(await balance(svc, m.api, TRC)).toEqual(before);
    await expectLedgerOk(svc);
  });

  it("wrong OTP, bad address, too much: refused, nothing held; the OTP stays usable until a payout runs", async () => {
    const before = await balance(svc, m.api, TRC);
    const otp = await payoutOtp();
    const bad = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 10, currencyType: TRC, walletAddress: EVM_TO, otp },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0].field).toBe("walletAddress");
    const wrong = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: {
        amount: 10,
        currencyType: TRC,
        walletAddress: TRON_TO,
        otp: otp === "000000" ? "111111" : "000000",
      },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.details.fields[0].field).toBe("otp");
    const tooMuch = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 1_000_000, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error.code).toBe("INSUFFICIENT_BALANCE");
    expect(await balance(svc, m.api, TRC)).toEqual(before);
    // The refused payout rolled back with the code's use: the same code pays once, then never again.
    const paid = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 3, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(paid.status, paid.text).toBe(201);
    const again = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 3, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(again.status).toBe(400);
    expect(again.body.error.details.fields[0].field).toBe("otp");
    await settled(paid.body.data.id, "transactions");
    expect(await balance(svc, m.api, TRC)).toEqual({ available: before.available - 3, held: before.held });
  });

  it("two payouts racing with one code: exactly one runs", async () => {
    const before = await balance(svc, m.api, TRC);
    const otp = await payoutOtp();
    const results = await Promise.all(
      [1, 2].map(() =>
        call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
          headers: m.bearer,
          json: { amount: 2, currencyType: TRC, walletAddress: TRON_TO, otp },
        }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 400]);
    const paid = results.find((r) => r.status === 201)!;
    await settled(paid.body.data.id, "transactions");
    expect(await balance(svc, m.api, TRC)).toEqual({ available: before.available - 2, held: before.held });
  });

  it("POST /api/v1/public/payout/create stays 404", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/payout/create", { headers: m.api, json: {} });
    expect(r.status).toBe(404);
  });
});
