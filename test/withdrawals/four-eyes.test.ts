import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { callOperation, dataOf } from "../support/operation.js";
import { addMember, type Member } from "../team/support.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { balance, expectLedgerOk, type Funded, fundedMerchant, hookStatuses } from "./support.js";

// Issue #21 "Four-eyes": above the settings' dualApprovalThreshold a withdrawal request needs two
// different approvers before it executes; the same member twice is refused; a key pair's approval
// is its member's (issue #34); a rejection by any approver ends it; concurrent approvals execute once (on
// PostgreSQL in CI's second pass: TEST_DATABASE_URL). Real sending pipeline on the simulator.

let svc: TestService;
let receiver: Receiver;
let m: Funded;
let finance: Member;
let admin: Member;
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 5000 });
  finance = await addMember(svc, m.bearer, "finance");
  admin = await addMember(svc, m.bearer, "admin");
  // Through the dashboard (sandbox settings need no step-up): everything waits for approval, and
  // above 100 USDT for two approvers.
  const s = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
    method: "PATCH",
    headers: m.bearer,
    json: { autoWithdraw: false, dualApprovalThreshold: { [TRC]: 100 } },
  });
  expect(s.status, s.text).toBe(200);
  expect(s.body.data.dualApprovalThreshold).toEqual({ [TRC]: 100, "USDT-ERC20": null });
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});
afterEach(async () => {
  await expectLedgerOk(svc);
});

const withdraw = async (amount: number) => {
  const r = await callOperation(svc.urls.sandbox, "createWithdrawalRequest", {
    headers: m.api,
    json: { currencyType: TRC, walletAddress: TRON_TO, amount },
  });
  const data = dataOf(r, 201);
  expect(data.status).toBe("pending");
  return data.id;
};

const approve = (id: string, headers: Record<string, string>) => {
  const path = headers.apikey ? "public" : "dashboard";
  return call(svc.urls.sandbox, `/api/v1/${path}/withdrawal-requests/${id}/approve`, { headers, json: {} });
};

async function transfers(id: string) {
  const rows = await svc.database.db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("intent_id", "=", id)
    .execute();
  return rows.length;
}

async function settled(id: string) {
  return waitFor(async () => {
    const r = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${id}`, { headers: m.api });
    return r.body.data.status !== "processing" && r.body.data.status !== "pending" ? r.body.data : null;
  }, 20_000);
}

async function hooksSettle(id: string, n: number) {
  await waitFor(() => hookStatuses(receiver, id).length >= n, 10_000);
  await new Promise((r) => setTimeout(r, 300));
  return hookStatuses(receiver, id);
}

describe("four-eyes", () => {
  it("the same member approving twice is refused; a second member's approval executes it: one transfer, one final webhook", async () => {
    const before = await balance(svc, m.api, TRC);
    const id = await withdraw(150);
    const first = await approve(id, finance.bearer);
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({ status: "pending", approvalsRequired: 2 });
    expect(first.body.data.approvals).toEqual([
      expect.objectContaining({ actorType: "user", actorId: finance.userId, email: finance.email }),
    ]);
    expect(await transfers(id)).toBe(0);

    const twice = await approve(id, finance.bearer);
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe("INVALID_STATE");
    expect(await transfers(id)).toBe(0);

    const second = await approve(id, admin.bearer);
    expect(second.status, second.text).toBe(200);
    expect(second.body.data.status).toBe("processing");
    expect(second.body.data.approvals.map((a: { actorId: string }) => a.actorId)).toEqual([
      finance.userId,
      admin.userId,
    ]);
    const done = await settled(id);
    expect(done.status).toBe("completed");
    expect(await transfers(id)).toBe(1);
    expect(await hooksSettle(id, 2)).toEqual(["pending", "completed"]);
    expect(await balance(svc, m.api, TRC)).toEqual({ available: before.available - 150, held: before.held });

    // The single read shows who approved.
    const read = await call(svc.urls.sandbox, `/api/v1/dashboard/withdrawal-requests/${id}`, {
      headers: m.bearer,
    });
    expect(read.body.data.approvals).toHaveLength(2);

    // Each approval is one audit record by its member.
    const audit = await svc.database.db
      .selectFrom("audit_log")
      .select(["actor_id", "actor_role", "details"])
      .where("action", "=", "withdrawal.approve")
      .where("target_id", "=", id)
      .orderBy("id")
      .execute();
    expect(audit.map((a) => [a.actor_id, a.actor_role])).toEqual([
      [finance.userId, "finance"],
      [admin.userId, "admin"],
    ]);
    expect(audit[0]?.details).toMatchObject({ approvals: 1, approvalsRequired: 2, status: "pending" });
  });

  it("at or under the threshold one approval executes it", async () => {
    const id = await withdraw(100);
    const r = await approve(id, finance.bearer);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: "processing", approvalsRequired: 1 });
    expect((await settled(id)).status).toBe("completed");
  });

  it("an API key pair's approval counts as the member it acts for (issue #34: the owner's pair and session are one person)", async () => {
    const id = await withdraw(200);
    const byApi = await approve(id, m.api);
    expect(byApi.status, byApi.text).toBe(200);
    expect(byApi.body.data.status).toBe("pending");
    const againByApi = await approve(id, m.api);
    expect(againByApi.status).toBe(409);
    expect((await approve(id, m.bearer)).status).toBe(409);
    const byMember = await approve(id, finance.bearer);
    expect(byMember.status, byMember.text).toBe(200);
    expect(byMember.body.data.status).toBe("processing");
    expect((await settled(id)).status).toBe("completed");
    expect(await transfers(id)).toBe(1);
  });

  it("a rejection by any approver after the first approval ends it; the hold is released", async () => {
    const before = await balance(svc, m.api, TRC);
    const id = await withdraw(300);
    expect((await approve(id, finance.bearer)).body.data.status).toBe("pending");
    const rej = await call(svc.urls.sandbox, `/api/v1/dashboard/withdrawal-requests/${id}/reject`, {
      headers: admin.bearer,
      json: { reason: "not ours" },
    });
    expect(rej.status, rej.text).toBe(200);
    expect(rej.body.data.status).toBe("rejected");
    expect((await approve(id, m.bearer)).status).toBe(409);
    expect(await transfers(id)).toBe(0);
    expect(await hooksSettle(id, 2)).toEqual(["pending", "rejected"]);
    expect(await balance(svc, m.api, TRC)).toEqual(before);
  });

  it("concurrent approvals by two members execute once (10 requests, both approvals in flight together)", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await withdraw(101 + i));
    const answers = await Promise.all(
      ids.flatMap((id) => [
        approve(id, finance.bearer),
        approve(id, admin.bearer),
        approve(id, finance.bearer),
      ]),
    );
    for (let i = 0; i < ids.length; i++) {
      const mine = answers.slice(i * 3, i * 3 + 3);
      const statuses = mine.map((a) => a.status).sort();
      // Two distinct approvers succeed; the finance member's second try is refused whichever came first.
      expect(statuses).toEqual([200, 200, 409]);
      const executed = mine.filter((a) => a.status === 200 && a.body.data.status === "processing");
      expect(executed).toHaveLength(1);
    }
    for (const id of ids) {
      expect((await settled(id)).status).toBe("completed");
      expect(await transfers(id)).toBe(1);
      expect(await hooksSettle(id, 2)).toEqual(["pending", "completed"]);
    }
  });

  it("a finance member's approval is refused on a viewer's session; settings refuse a bad threshold", async () => {
    const viewer = await addMember(svc, m.bearer, "viewer");
    const id = await withdraw(120);
    const r = await approve(id, viewer.bearer);
    expect(r.status).toBe(403);
    expect(r.body.error.details.permission).toBe("withdrawals:approve");
    for (const bad of [{ [TRC]: -1 }, { [TRC]: "1.1234567" }, { "USDT-FOO": 5 }, { [TRC]: true }]) {
      const s = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
        method: "PATCH",
        headers: m.bearer,
        json: { dualApprovalThreshold: bad },
      });
      expect(s.status, JSON.stringify(bad)).toBe(400);
    }
    const off = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
      method: "PATCH",
      headers: m.bearer,
      json: { dualApprovalThreshold: { [TRC]: null } },
    });
    expect(off.body.data.dualApprovalThreshold[TRC]).toBeNull();
    // Off: one approval now suffices, also for a request made while it was on.
    const r2 = await approve(id, finance.bearer);
    expect(r2.body.data).toMatchObject({ status: "processing", approvalsRequired: 1 });
    expect((await settled(id)).status).toBe("completed");
  });
});
