import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, type Member, otpFor } from "../team/support.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { expectLedgerOk, type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #34 finding 4 (High): four-eyes (`dualApprovalThreshold`) was satisfied by one person: the
// owner approved with its API key pair, then again with its dashboard session, and the withdrawal
// executed. docs/decisions/team-accounts.md#four-eyes: the approvals counted are those of distinct people; an approval through
// the API-key channel counts as the member who created (holds) that key pair.

let svc: TestService;
let receiver: Receiver;
let m: Funded;
let developer: Member;
let finance: Member;
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 2000 });
  developer = await addMember(svc, m.bearer, "developer");
  finance = await addMember(svc, m.bearer, "finance");
  const s = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
    method: "PATCH",
    headers: m.bearer,
    json: { autoWithdraw: false, dualApprovalThreshold: { [TRC]: 100 } },
  });
  expect(s.status, s.text).toBe(200);
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

const withdraw = async (amount: number) => {
  const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers: m.api,
    json: { currencyType: TRC, walletAddress: TRON_TO, amount },
  });
  expect(r.status, r.text).toBe(201);
  expect(r.body.data.status).toBe("pending");
  return r.body.data.id as string;
};

const approve = (id: string, headers: Headers) =>
  call(
    svc.urls.sandbox,
    `/api/v1/${headers.apikey ? "public" : "dashboard"}/withdrawal-requests/${id}/approve`,
    {
      headers,
      json: {},
    },
  );

async function transfers(id: string) {
  const rows = await svc.database.db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("intent_id", "=", id)
    .execute();
  return rows.length;
}

async function mintSandboxPair(who: Headers): Promise<Headers> {
  const r = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", { headers: who, json: {} });
  expect(r.status, r.text).toBe(201);
  return { apikey: r.body.data.apiKey, "x-api-secret": r.body.data.apiSecret };
}

function expectSamePersonRefused(r: { status: number; body: any; text: string }) {
  expect(r.status, r.text).toBe(409);
  expect(r.body.error.code).toBe("INVALID_STATE");
}

describe("four-eyes counts people, not channels", () => {
  it("the owner's API key then the owner's session: the second is refused, nothing is sent", async () => {
    const id = await withdraw(150);
    const byKey = await approve(id, m.api);
    expect(byKey.status, byKey.text).toBe(200);
    expect(byKey.body.data.status).toBe("pending");
    expectSamePersonRefused(await approve(id, m.bearer));
    expect(await transfers(id)).toBe(0);
    // A second person completes it.
    const second = await approve(id, finance.bearer);
    expect(second.status, second.text).toBe(200);
    expect(second.body.data.status).toBe("processing");
  });

  it("the owner's session then the owner's API key: refused the same way", async () => {
    const id = await withdraw(160);
    expect((await approve(id, m.bearer)).body.data.status).toBe("pending");
    expectSamePersonRefused(await approve(id, m.api));
    expect(await transfers(id)).toBe(0);
  });

  it("two key pairs of one member count once; a member's pair and another member's session count twice", async () => {
    const devKeyA = await mintSandboxPair(developer.bearer);
    const devKeyB = await mintSandboxPair(developer.bearer);
    const id = await withdraw(170);
    expect((await approve(id, devKeyA)).body.data.status).toBe("pending");
    expectSamePersonRefused(await approve(id, devKeyB));
    expectSamePersonRefused(await approve(id, developer.bearer));
    expect(await transfers(id)).toBe(0);
    const r = await approve(id, m.api);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.status).toBe("processing");
    // The approval through a key names the member it counted as.
    expect(r.body.data.approvals.map((a: { email: string | null }) => a.email)).toEqual([
      developer.email,
      m.email,
    ]);
    // And so does its audit record (not only the key's id).
    const records = await svc.database.db
      .selectFrom("audit_log")
      .select(["actor_type", "details"])
      .where("action", "=", "withdrawal.approve")
      .where("target_id", "=", id)
      .orderBy("id")
      .execute();
    expect(records.map((x) => [x.actor_type, (x.details as any).actingFor?.email ?? null])).toEqual([
      ["api_key", developer.email],
      ["api_key", m.email],
    ]);
    await waitFor(async () => {
      const x = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${id}`, { headers: m.api });
      return x.body.data.status === "completed";
    }, 20_000);
    expect(await transfers(id)).toBe(1);
    await expectLedgerOk(svc);
  });

  // The outside review of #34's result: approvals by members removed or demoted before the request
  // executed still counted. Four-eyes is the control in force when the money moves.
  it("an approval by a member demoted or removed since counts no more", async () => {
    const base = svc.urls.sandbox;
    const demoted = await addMember(svc, m.bearer, "finance");
    const removed = await addMember(svc, m.bearer, "finance");
    const other = await addMember(svc, m.bearer, "finance");

    const first = await withdraw(180);
    expect((await approve(first, demoted.bearer)).body.data.status).toBe("pending");
    const demote = await call(base, `/api/v1/dashboard/members/${demoted.userId}`, {
      method: "PATCH",
      headers: m.bearer,
      json: { role: "viewer", otp: await otpFor(base, m.bearer) },
    });
    expect(demote.status, demote.text).toBe(200);
    const afterDemotion = await approve(first, m.bearer);
    expect(afterDemotion.status, afterDemotion.text).toBe(200);
    // Two approvals on record, one standing: it waits for a second person who may approve.
    expect(afterDemotion.body.data.status).toBe("pending");
    expect(afterDemotion.body.data.approvals).toHaveLength(2);
    expect(await transfers(first)).toBe(0);
    expect((await approve(first, other.bearer)).body.data.status).toBe("processing");

    const second = await withdraw(190);
    expect((await approve(second, removed.bearer)).body.data.status).toBe("pending");
    const remove = await call(base, `/api/v1/dashboard/members/${removed.userId}`, {
      method: "DELETE",
      headers: m.bearer,
    });
    expect(remove.status, remove.text).toBe(200);
    expect((await approve(second, m.bearer)).body.data.status).toBe("pending");
    expect(await transfers(second)).toBe(0);
    expect((await approve(second, other.bearer)).body.data.status).toBe("processing");
    await expectLedgerOk(svc);
  });
});
