import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, type Member, otpFor, registerOwner } from "../team/support.js";

// Issue #34 finding 3 (High): a `developer` (read-only on production money) minted a production
// key pair (allowed, with step-up) and withdrew through the API-key channel, which had no role.
// docs/permissions.md, one principal model: a key pair records who created it (`createdBy`) and never does
// more than that member's role allows in its environment (403 `key_owner_role`); when the member is
// removed its pairs stop (403 `key_owner_removed`) until an owner or admin takes them over, which
// gives the pair a new secret (a pair acts for whoever holds its secret; test 29).

let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;
let developer: Member;
let finance: Member;

const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  owner = await registerOwner(svc);
  developer = await addMember(svc, owner.bearer, "developer", "production");
  finance = await addMember(svc, owner.bearer, "finance", "production");
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

interface MintedPair {
  id: string;
  headers: Headers;
  createdBy: string;
}

/** A key pair minted on the dashboard by `who` (production: with the step-up code). */
async function mint(who: Headers, environment: "production" | "sandbox"): Promise<MintedPair> {
  const json: Record<string, unknown> = { environment };
  if (environment === "production") json.otp = await otpFor(svc.urls.sandbox, who);
  const r = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", { headers: who, json });
  expect(r.status, r.text).toBe(201);
  return {
    id: r.body.data.id,
    createdBy: r.body.data.createdBy,
    headers: { apikey: r.body.data.apiKey, "x-api-secret": r.body.data.apiSecret },
  };
}

const base = (env: "production" | "sandbox") =>
  env === "production" ? svc.urls.production : svc.urls.sandbox;

const withdraw = (env: "production" | "sandbox", headers: Headers) =>
  call(base(env), "/api/v1/public/withdrawal-requests", {
    headers,
    json: { currencyType: TRC, walletAddress: TRON_TO, amount: 50 },
  });

const approve = (env: "production" | "sandbox", headers: Headers, id = "wr_does_not_matter") =>
  call(base(env), `/api/v1/public/withdrawal-requests/${id}/approve`, { headers, json: {} });

function expectRefused(r: { status: number; body: any; text: string }, reason: string) {
  expect(r.status, r.text).toBe(403);
  expect(r.body.error.code).toBe("FORBIDDEN");
  expect(r.body.error.details.reason).toBe(reason);
}

describe("a developer's production key pair acts as the developer", () => {
  let devProd: MintedPair;

  it("the pair records its creator", async () => {
    devProd = await mint(developer.bearer, "production");
    expect(devProd.createdBy).toBe(developer.userId);
    const list = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", {
      headers: { ...owner.bearer, "x-environment": "production" },
    });
    expect(list.status, list.text).toBe(200);
    const row = list.body.data.find((k: { id: string }) => k.id === devProd.id);
    expect(row.createdBy).toBe(developer.userId);
    // Pairs made at registration belong to the owner.
    for (const k of list.body.data.filter((x: { id: string }) => x.id !== devProd.id))
      expect(k.createdBy).toBe(owner.userId);
  });

  it("cannot create, approve or reject a production withdrawal: 403 key_owner_role", async () => {
    const created = await withdraw("production", devProd.headers);
    expectRefused(created, "key_owner_role");
    expect(created.body.error.details).toMatchObject({ role: "developer" });
    expectRefused(await approve("production", devProd.headers), "key_owner_role");
    expectRefused(
      await call(svc.urls.production, "/api/v1/public/withdrawal-requests/wr_x/reject", {
        headers: devProd.headers,
        json: {},
      }),
      "key_owner_role",
    );
    // Nothing was held or written.
    const rows = await svc.database.db
      .selectFrom("transactions")
      .select("id")
      .where("merchant_id", "=", owner.merchantId)
      .where("type", "=", "withdrawal")
      .execute();
    expect(rows).toEqual([]);
  });

  it("still reads what a developer may read in production, and says whom it acts for", async () => {
    const r = await call(svc.urls.production, "/api/v1/public/balance", { headers: devProd.headers });
    expect(r.status, r.text).toBe(200);
    const who = await call(svc.urls.production, "/api/v1/public/account", { headers: devProd.headers });
    expect(who.status, who.text).toBe(200);
    expect(who.body.data).toMatchObject({
      apiKeyId: devProd.id,
      createdBy: developer.userId,
      role: "developer",
    });
  });

  it("in sandbox, where a developer may move money, its sandbox pair passes the permission check", async () => {
    const devSandbox = await mint(developer.bearer, "sandbox");
    const r = await withdraw("sandbox", devSandbox.headers);
    // No balance: refused by the money rule, not by the role.
    expect(r.status, r.text).not.toBe(403);
    expect(r.status).not.toBe(401);
  });

  it("stops when its creator is removed (key_owner_removed), even for reads; the owner takes it over with a new secret", async () => {
    const removed = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${developer.userId}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(removed.status, removed.text).toBe(200);
    expectRefused(
      await call(svc.urls.production, "/api/v1/public/balance", { headers: devProd.headers }),
      "key_owner_removed",
    );
    expectRefused(await withdraw("production", devProd.headers), "key_owner_removed");

    // Taking over a production pair is a sensitive write: step-up.
    const prodOwner = { ...owner.bearer, "x-environment": "production" };
    const noCode = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devProd.id}/reassign`, {
      headers: prodOwner,
      json: { memberId: owner.userId },
    });
    expect(noCode.status, noCode.text).toBe(400);
    // A pair acts for whoever holds its secret: never made to act for another member (the removed
    // developer kept this secret), whether a current member or not.
    for (const memberId of [finance.userId, developer.userId]) {
      const toOther = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devProd.id}/reassign`, {
        headers: prodOwner,
        json: { memberId, otp: await otpFor(svc.urls.sandbox, owner.bearer) },
      });
      expect(toOther.status, toOther.text).toBe(403);
      expect(toOther.body.error.message).toMatch(/whoever holds its secret/);
    }

    const r = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devProd.id}/reassign`, {
      headers: prodOwner,
      json: { memberId: owner.userId, otp: await otpFor(svc.urls.sandbox, owner.bearer) },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({
      id: devProd.id,
      apiKey: devProd.headers.apikey,
      createdBy: owner.userId,
      environment: "production",
    });
    expect(r.body.data.apiSecret).not.toBe(devProd.headers["x-api-secret"]);
    const audit = await svc.database.db
      .selectFrom("audit_log")
      .select(["action", "actor_id", "target_id", "details"])
      .where("action", "=", "api_key.reassign")
      .where("target_id", "=", devProd.id)
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]?.actor_id).toBe(owner.userId);
    expect(audit[0]?.details).toMatchObject({ from: developer.userId, to: owner.userId });

    // The removed developer's secret is dead; the owner's new one acts as the owner.
    const old = await call(svc.urls.production, "/api/v1/public/balance", { headers: devProd.headers });
    expect(old.status, old.text).toBe(401);
    expect((await withdraw("production", devProd.headers)).status).toBe(401);
    const fresh = {
      apikey: devProd.headers.apikey as string,
      "x-api-secret": r.body.data.apiSecret as string,
    };
    const who = await call(svc.urls.production, "/api/v1/public/account", { headers: fresh });
    expect(who.status, who.text).toBe(200);
    expect(who.body.data).toMatchObject({ apiKeyId: devProd.id, createdBy: owner.userId, role: "owner" });
    const w = await withdraw("production", fresh);
    expect(w.status, w.text).not.toBe(403);
    expect(w.status).not.toBe(401);
  });

  it("a demotion takes the permission away from the member's pairs on their next request", async () => {
    const admin = await addMember(svc, owner.bearer, "admin", "production");
    const pair = await mint(admin.bearer, "production");
    expect(
      (await call(svc.urls.production, "/api/v1/webhook/events", { headers: pair.headers })).status,
    ).toBe(200);
    const demote = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${admin.userId}`, {
      method: "PATCH",
      headers: owner.bearer,
      json: { role: "viewer", otp: await otpFor(svc.urls.sandbox, owner.bearer) },
    });
    expect(demote.status, demote.text).toBe(200);
    expectRefused(
      await call(svc.urls.production, "/api/v1/webhook/events", { headers: pair.headers }),
      "key_owner_role",
    );
    expectRefused(await approve("production", pair.headers), "key_owner_role");
  });

  it("only an owner or admin takes a pair over, only for itself, never the owner's (admin)", async () => {
    const dev2 = await addMember(svc, owner.bearer, "developer");
    const admin2 = await addMember(svc, owner.bearer, "admin");
    const devPair = await mint(dev2.bearer, "sandbox");
    const ownerPair = await mint(owner.bearer, "sandbox");
    // A developer (it has api_keys:write) cannot reassign, not even its own pair.
    const byDev = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devPair.id}/reassign`, {
      headers: dev2.bearer,
      json: { memberId: owner.userId },
    });
    expect(byDev.status, byDev.text).toBe(403);
    // An admin cannot make a pair act for the owner (nor for anyone but itself), nor take the owner's pair.
    const toOwner = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devPair.id}/reassign`, {
      headers: admin2.bearer,
      json: { memberId: owner.userId },
    });
    expect(toOwner.status, toOwner.text).toBe(403);
    const takeOwners = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${ownerPair.id}/reassign`, {
      headers: admin2.bearer,
      json: { memberId: admin2.userId },
    });
    expect(takeOwners.status, takeOwners.text).toBe(403);
    // An admin takes a developer's pair over: a new secret, for the admin; the developer's stops.
    const ok = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devPair.id}/reassign`, {
      headers: admin2.bearer,
      json: { memberId: admin2.userId },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.createdBy).toBe(admin2.userId);
    expect(typeof ok.body.data.apiSecret).toBe("string");
    const devKept = await call(svc.urls.sandbox, "/api/v1/public/balance", { headers: devPair.headers });
    expect(devKept.status, devKept.text).toBe(401);
    // Another merchant's member: not the actor either (403); another merchant's pair: 404.
    const other = await registerOwner(svc);
    const foreign = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devPair.id}/reassign`, {
      headers: owner.bearer,
      json: { memberId: other.userId },
    });
    expect(foreign.status, foreign.text).toBe(403);
    const foreignKey = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${devPair.id}/reassign`, {
      headers: other.bearer,
      json: { memberId: other.userId },
    });
    expect(foreignKey.status, foreignKey.text).toBe(404);
    // A revoked pair cannot be taken over.
    const revoked = await mint(dev2.bearer, "sandbox");
    const del = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${revoked.id}`, {
      method: "DELETE",
      headers: owner.bearer,
    });
    expect(del.status, del.text).toBe(200);
    const takeRevoked = await call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${revoked.id}/reassign`, {
      headers: owner.bearer,
      json: { memberId: owner.userId },
    });
    expect(takeRevoked.status, takeRevoked.text).toBe(409);
  });
});
