import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { updateSettings } from "../../src/merchants/index.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { balance, expectLedgerOk, type Funded, fundedMerchant, hookStatuses } from "./support.js";

// Withdrawal requests that wait for the merchant (the manual-approval lifecycle, docs/api-reference.md#withdrawals), validation, and the
// hold under concurrency — everything up to execution, on the sandbox simulator.
let svc: TestService;
let receiver: Receiver;
let m: Funded;
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const EVM_TO = "0x8ba1f109551bD432803012645Ac136ddd64DBA72";

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 1000 });
  // Manual approval for everything in this file.
  await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: false }, new Date());
});

// `stablegate ledger verify` after every test: every posting balances, every balance matches its journal.
afterEach(async () => {
  await expectLedgerOk(svc);
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const request = (json: Record<string, unknown>, headers: Record<string, string> = m.api) =>
  call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers,
    json: { currencyType: TRC, walletAddress: TRON_TO, ...json },
  });

describe("manual flow: pending, then rejected (two webhooks, hold released)", () => {
  it("holds the amount, answers pending with every field, sends the pending webhook", async () => {
    const before = await balance(svc, m.api, TRC);
    const r = await request({ amount: 50, externalUserId: "u-7", reference: "wd-1" });
    expect(r.status, r.text).toBe(201);
    const w = r.body.data;
    expect(w).toMatchObject({
      status: "pending",
      amount: 50,
      fee: 1,
      netAmount: 49,
      currencyType: TRC,
      network: TRC,
      walletAddress: TRON_TO,
      externalUserId: "u-7",
      reference: "wd-1",
      blockchainTxHash: null,
      rejectionReason: null,
      confirmedAt: null,
    });
    expect(w.transactionId).toBe(w.id);
    const after = await balance(svc, m.api, TRC);
    expect(after.available).toBe(before.available - 50);
    expect(after.held).toBe(before.held + 50);
    await waitFor(() => hookStatuses(receiver, w.id).length === 1);
    expect(hookStatuses(receiver, w.id)).toEqual(["pending"]);

    const list = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", { headers: m.api });
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(w.id);
    const one = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${w.id}`, {
      headers: m.api,
    });
    // A single request's read adds who approved it and how many approvals it needs (four-eyes, #21).
    expect(one.body.data).toEqual({ ...w, approvals: [], approvalsRequired: 1 });

    const rej = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${w.id}/reject`, {
      headers: m.api,
      json: { reason: "KYC incomplete" },
    });
    expect(rej.status, rej.text).toBe(200);
    expect(rej.body.data).toMatchObject({ status: "rejected", rejectionReason: "KYC incomplete" });
    expect(await balance(svc, m.api, TRC)).toEqual(before);
    await waitFor(() => hookStatuses(receiver, w.id).length === 2);
    expect(hookStatuses(receiver, w.id)).toEqual(["pending", "rejected"]);

    // Not pending any more: 409 for both actions.
    for (const action of ["approve", "reject"]) {
      const again = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${w.id}/${action}`, {
        headers: m.api,
        json: {},
      });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe("INVALID_STATE");
    }
    const rejected = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests?status=rejected", {
      headers: m.api,
    });
    expect(rejected.body.data.map((x: { id: string }) => x.id)).toContain(w.id);
    await expectLedgerOk(svc);
  });

  it("the dashboard lists and rejects the same requests", async () => {
    const r = await request({ amount: 5 });
    const id = r.body.data.id;
    const list = await call(svc.urls.sandbox, "/api/v1/dashboard/withdrawal-requests", { headers: m.bearer });
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(id);
    const rej = await call(svc.urls.sandbox, `/api/v1/dashboard/withdrawal-requests/${id}/reject`, {
      headers: m.bearer,
      json: {},
    });
    expect(rej.status, rej.text).toBe(200);
    expect(rej.body.data.status).toBe("rejected");
  });
});

describe("every failure answers in the contract's envelope", () => {
  it.each([
    ["invalid TRON address", { walletAddress: "TNotAnAddress" }, "walletAddress"],
    ["EVM address for TRC20", { walletAddress: EVM_TO }, "walletAddress"],
    ["TRON address for ERC20", { currencyType: "USDT-ERC20", walletAddress: TRON_TO }, "walletAddress"],
    [
      "bad EIP-55 checksum",
      { currencyType: "USDT-ERC20", walletAddress: "0x8Ba1f109551bD432803012645Ac136ddd64DBA72" },
      "walletAddress",
    ],
    ["amount not above the fee", { amount: 1 }, "amount"],
    ["too many decimals", { amount: 2.0000001 }, "amount"],
  ])("%s → 400", async (_name, body, field) => {
    const r = await request({ amount: 10, ...body });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
  });

  it("more than the available balance → 422 INSUFFICIENT_BALANCE, nothing held", async () => {
    const before = await balance(svc, m.api, TRC);
    const r = await request({ amount: before.available + 1 });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("INSUFFICIENT_BALANCE");
    expect(await balance(svc, m.api, TRC)).toEqual(before);
  });

  it("the secret is required; unknown and other-environment ids are 404", async () => {
    const noSecret = await request({ amount: 10 }, { apikey: m.api.apikey } as Record<string, string>);
    expect(noSecret.status).toBe(401);
    const unknown = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests/tx_nope/approve", {
      headers: m.api,
      json: {},
    });
    expect(unknown.status).toBe(404);
    const r = await request({ amount: 3 });
    const prod = await call(svc.urls.production, `/api/v1/dashboard/withdrawal-requests/${r.body.data.id}`, {
      headers: { authorization: m.bearer.authorization, "x-environment": "production" },
    });
    expect(prod.status).toBe(404);
  });
});

describe("concurrency", () => {
  it("300 parallel requests against a balance for 100 → exactly 100 held", async () => {
    const fresh = await fundedMerchant(svc, receiver, { [TRC]: 200 });
    await updateSettings(svc.database.db, fresh.merchantId, "sandbox", { autoWithdraw: false }, new Date());
    const results = await Promise.all(Array.from({ length: 300 }, () => request({ amount: 2 }, fresh.api)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(100);
    expect(statuses.filter((s) => s === 422)).toHaveLength(200);
    for (const r of results.filter((x) => x.status === 422))
      expect(r.body.error.code).toBe("INSUFFICIENT_BALANCE");
    expect(await balance(svc, fresh.api, TRC)).toEqual({ available: 0, held: 200 });
    await expectLedgerOk(svc);
  }, 60_000);
});
