import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStream } from "../http/webhook-stream-client.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, type Member } from "../team/support.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #34, outside review of the principal model (High): reassigning a key pair kept its secret
// with whoever already held it, so the member a pair acted for and the person holding its secret
// differed. One admin satisfied four-eyes alone (approve with its pair, reassign the pair to a
// finance member, approve again with the same secret); an admin reassigning a developer's pair to
// a money role gave the developer that role through the secret it kept; "reassigning to restore" a
// removed member's pair let the removed person back in. The root: a pair acts for whoever holds its
// secret. Reassigning gives the pair a new secret (same id and public key; the old secret stops at
// once), shown once to the actor, and may only make the pair act for the actor itself.

let svc: TestService;
let receiver: Receiver;
let m: Funded;
let admin: Member;
let finance: Member;
let developer: Member;
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 2000 });
  admin = await addMember(svc, m.bearer, "admin");
  finance = await addMember(svc, m.bearer, "finance");
  developer = await addMember(svc, m.bearer, "developer");
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

interface Pair {
  id: string;
  apiKey: string;
  headers: Headers;
}

async function mint(who: Headers): Promise<Pair> {
  const r = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", { headers: who, json: {} });
  expect(r.status, r.text).toBe(201);
  return {
    id: r.body.data.id,
    apiKey: r.body.data.apiKey,
    headers: { apikey: r.body.data.apiKey, "x-api-secret": r.body.data.apiSecret },
  };
}

const reassign = (who: Headers, id: string, memberId: string) =>
  call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${id}/reassign`, { headers: who, json: { memberId } });

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
    { headers, json: {} },
  );

async function transfers(id: string) {
  const rows = await svc.database.db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("intent_id", "=", id)
    .execute();
  return rows.length;
}

const balance = (headers: Headers) => call(svc.urls.sandbox, "/api/v1/public/balance", { headers });

function expectTakeOverOnly(r: { status: number; body: any; text: string }) {
  expect(r.status, r.text).toBe(403);
  expect(r.body.error.code).toBe("FORBIDDEN");
  expect(r.body.error.message).toMatch(/whoever holds its secret/);
}

describe("a key pair acts for whoever holds its secret", () => {
  it("one admin cannot satisfy four-eyes by reassigning its pair to a finance member", async () => {
    const k = await mint(admin.bearer);
    const id = await withdraw(150);
    const first = await approve(id, k.headers);
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.status).toBe("pending");

    expectTakeOverOnly(await reassign(admin.bearer, k.id, finance.userId));
    // The same secret still counts as the admin: the second approval is refused, nothing is sent.
    const second = await approve(id, k.headers);
    expect(second.status, second.text).toBe(409);
    expect(await transfers(id)).toBe(0);
    const row = await svc.database.db
      .selectFrom("api_keys")
      .select("created_by")
      .where("id", "=", k.id)
      .executeTakeFirstOrThrow();
    expect(row.created_by).toBe(admin.userId);
  });

  it("nor by approving by session and then with its own pair reassigned to a developer", async () => {
    const k = await mint(admin.bearer);
    const id = await withdraw(160);
    expect((await approve(id, admin.bearer)).body.data.status).toBe("pending");
    expectTakeOverOnly(await reassign(admin.bearer, k.id, developer.userId));
    expect((await approve(id, k.headers)).status).toBe(409);
    expect(await transfers(id)).toBe(0);
  });

  it("the owner restoring a removed member's pair takes it over: the removed member's secret stops", async () => {
    const leaver = await addMember(svc, m.bearer, "developer");
    const k = await mint(leaver.bearer);
    expect((await balance(k.headers)).status).toBe(200);
    const removed = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${leaver.userId}`, {
      method: "DELETE",
      headers: m.bearer,
    });
    expect(removed.status, removed.text).toBe(200);
    // Not to another member: that member would act through a secret the leaver kept.
    expectTakeOverOnly(await reassign(m.bearer, k.id, finance.userId));

    const r = await reassign(m.bearer, k.id, m.userId);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({
      id: k.id,
      apiKey: k.apiKey,
      createdBy: m.userId,
      environment: "sandbox",
    });
    expect(typeof r.body.data.apiSecret).toBe("string");
    expect(r.body.data.apiSecret).not.toBe(k.headers["x-api-secret"]);

    const old = await balance(k.headers);
    expect(old.status, old.text).toBe(401);
    const fresh = { apikey: k.apiKey, "x-api-secret": r.body.data.apiSecret as string };
    expect((await balance(fresh)).status).toBe(200);
    const who = await call(svc.urls.sandbox, "/api/v1/public/account", { headers: fresh });
    expect(who.status, who.text).toBe(200);
    expect(who.body.data).toMatchObject({ apiKeyId: k.id, createdBy: m.userId, role: "owner" });
    // The list shows the new secret's hint.
    const list = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys?limit=100", { headers: m.bearer });
    const listed = list.body.data.find((x: { id: string }) => x.id === k.id);
    expect(listed.secretHint).toBe(`…${(r.body.data.apiSecret as string).slice(-4)}`);

    const audit = await svc.database.db
      .selectFrom("audit_log")
      .select(["actor_id", "details"])
      .where("action", "=", "api_key.reassign")
      .where("target_id", "=", k.id)
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]?.actor_id).toBe(m.userId);
    expect(audit[0]?.details).toMatchObject({ from: leaver.userId, to: m.userId });
    expect(JSON.stringify(audit[0]?.details)).not.toContain(r.body.data.apiSecret);
  });

  it("an admin cannot give a developer's pair a money role; taking it over stops the developer's secret", async () => {
    const k = await mint(developer.bearer);
    expectTakeOverOnly(await reassign(admin.bearer, k.id, finance.userId));
    expectTakeOverOnly(await reassign(admin.bearer, k.id, m.userId));
    expect((await balance(k.headers)).status).toBe(200);

    const r = await reassign(admin.bearer, k.id, admin.userId);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ id: k.id, apiKey: k.apiKey, createdBy: admin.userId });
    // The developer kept the old secret: it no longer works, for anything.
    const id = await withdraw(170);
    const byDev = await approve(id, k.headers);
    expect(byDev.status, byDev.text).toBe(401);
    expect((await balance(k.headers)).status).toBe(401);
    expect(await transfers(id)).toBe(0);
    // The admin, who holds the new secret, acts through it as itself.
    const fresh = { apikey: k.apiKey, "x-api-secret": r.body.data.apiSecret as string };
    const byAdmin = await approve(id, fresh);
    expect(byAdmin.status, byAdmin.text).toBe(200);
    expect(byAdmin.body.data.approvals.map((a: { email: string | null }) => a.email)).toEqual([admin.email]);
  });

  it("a stream opened with the kept secret ends when the pair is taken over", async () => {
    const k = await mint(developer.bearer);
    const o = await openStream(svc.urls.sandbox, k.headers);
    try {
      expect(o.res.status).toBe(200);
      await waitFor(() => o.raw.join("").includes(": connected"), 5_000);
      const r = await reassign(admin.bearer, k.id, admin.userId);
      expect(r.status, r.text).toBe(200);
      await waitFor(() => o.ended, 10_000);
      const end = o.others.find((x) => x.event === "end");
      expect(end, o.raw.join("")).toBeDefined();
      const data = JSON.parse(end!.data);
      expect(data.reason).toBe("access");
      expect(data.error).toMatchObject({ code: "INVALID_AUTH" });
    } finally {
      await o.close();
    }
  });
});
