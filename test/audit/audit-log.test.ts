import { sql } from "kysely";
import { generate } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { purgeAuditLog } from "../../src/audit/index.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #21 "Audit log": every action leaves exactly one record with actor, role, environment,
// client IP, user agent, request id, target and time; the table refuses update and delete; the
// merchant reads it at GET /api/v1/dashboard/audit-log.

const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const PASSWORD = "a long passphrase 123";
const UA = "audit-test/1.0";

let svc: TestService;
let receiver: Receiver;
let m: Funded;

interface Row {
  id: string;
  merchant_id: string | null;
  environment: string | null;
  actor_type: string;
  actor_id: string | null;
  actor_email: string | null;
  actor_role: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  details: Record<string, unknown>;
  client_ip: string | null;
  user_agent: string | null;
  request_id: string | null;
}

async function rows(): Promise<Row[]> {
  const r = await sql<Row>`select id::text as id, merchant_id, environment, actor_type, actor_id, actor_email,
      actor_role, action, target_type, target_id, details, client_ip, user_agent, request_id
    from audit_log order by audit_log.id`.execute(svc.database.db);
  return r.rows.map((x) => ({
    ...x,
    details: typeof x.details === "string" ? JSON.parse(x.details) : x.details,
  }));
}

/** Runs `act` and returns the audit records it added: the test asserts there is exactly one. */
async function added(act: () => Promise<unknown>): Promise<Row[]> {
  const before = (await rows()).length;
  await act();
  return (await rows()).slice(before);
}

async function one(act: () => Promise<{ status: number; text: string; headers: Headers }>, status: number) {
  let res: { status: number; text: string; headers: Headers } | undefined;
  const fresh = await added(async () => {
    res = await act();
  });
  expect(res?.status, res?.text).toBe(status);
  expect(fresh, JSON.stringify(fresh)).toHaveLength(1);
  const [record] = fresh as [Row];
  expect(record.client_ip).toBe("127.0.0.1");
  expect(record.user_agent).toBe(UA);
  expect(record.request_id).toBe(res?.headers.get("x-request-id"));
  return { record, res: res as { status: number; text: string; headers: Headers; body?: unknown } };
}

const bearer = () => ({ ...m.bearer, "user-agent": UA });
const api = () => ({ ...m.api, "user-agent": UA });

async function mailedCode(purpose: string): Promise<string> {
  const sent = await call(svc.urls.sandbox, "/api/v1/auth/otp", { headers: bearer(), json: { purpose } });
  expect(sent.status, sent.text).toBe(200);
  const mail = await call(svc.urls.sandbox, "/api/v1/dashboard/dev/mail?limit=1", { headers: bearer() });
  const code = /\b(\d{6})\b/.exec(mail.body.data[0].text)?.[1];
  if (!code) throw new Error("no code in the mail");
  return code;
}

beforeAll(async () => {
  svc = await startTestService({
    env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false", CHECKOUT_MIN_EXPIRY_SECONDS: "1" },
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 5000 });
});
afterAll(async () => {
  await svc?.close();
  await receiver?.close();
});

describe("every action leaves exactly one record", () => {
  it("the webhook URL set with the API key (by fundedMerchant): actor is the key, environment sandbox", async () => {
    const set = (await rows()).filter(
      (r) => r.action === "webhook.url_update" && r.merchant_id === m.merchantId,
    );
    expect(set).toHaveLength(1);
    expect(set[0]).toMatchObject({
      actor_type: "api_key",
      environment: "sandbox",
      details: { webhookUrl: receiver.url() },
    });
  });

  it("sign-in, failed sign-in (known and unknown e-mail)", async () => {
    const ok = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/auth/login", {
          headers: { "user-agent": UA },
          json: { email: m.email, password: PASSWORD },
        }),
      200,
    );
    expect(ok.record).toMatchObject({
      merchant_id: m.merchantId,
      environment: null,
      action: "auth.sign_in",
      actor_type: "user",
      actor_id: m.userId,
      actor_email: m.email,
      actor_role: "owner",
    });
    const wrong = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/auth/login", {
          headers: { "user-agent": UA },
          json: { email: m.email, password: "wrong password 123" },
        }),
      401,
    );
    expect(wrong.record).toMatchObject({
      merchant_id: m.merchantId,
      action: "auth.sign_in_failed",
      actor_id: null,
      actor_email: m.email,
      target_type: "user",
      target_id: m.userId,
    });
    const unknown = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/auth/login", {
          headers: { "user-agent": UA },
          json: { email: "nobody-here@example.com", password: "wrong password 123" },
        }),
      401,
    );
    expect(unknown.record).toMatchObject({
      merchant_id: null,
      action: "auth.sign_in_failed",
      target_id: null,
    });
    // A refused body (400) is not a sign-in attempt: no record.
    const bad = await added(() => call(svc.urls.sandbox, "/api/v1/auth/login", { json: { email: 1 } }));
    expect(bad).toEqual([]);
  });

  it("API key create, rotate, revoke: the key is the target", async () => {
    const created = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", {
          headers: bearer(),
          json: { environment: "sandbox" },
        }),
      201,
    );
    const id = (created.res.body as { data: { id: string } }).data.id;
    expect(created.record).toMatchObject({
      action: "api_key.create",
      actor_id: m.userId,
      actor_role: "owner",
      environment: "sandbox",
      target_type: "api_key",
      target_id: id,
      details: { environment: "sandbox" },
    });
    const rotated = await one(
      () =>
        call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${id}/rotate`, { headers: bearer(), json: {} }),
      200,
    );
    expect(rotated.record).toMatchObject({ action: "api_key.rotate", target_id: id });
    const newId = (rotated.res.body as { data: { id: string } }).data.id;
    const revoked = await one(
      () =>
        call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${newId}`, {
          method: "DELETE",
          headers: bearer(),
        }),
      200,
    );
    expect(revoked.record).toMatchObject({ action: "api_key.revoke", target_id: newId });
    // Revoking it again is refused (409): no record.
    const again = await added(() =>
      call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${newId}`, { method: "DELETE", headers: bearer() }),
    );
    expect(again).toEqual([]);
  });

  it("a settings change records before and after", async () => {
    const changed = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
          method: "PATCH",
          headers: bearer(),
          json: { underpaymentTolerancePercent: 1.5 },
        }),
      200,
    );
    expect(changed.record.action).toBe("settings.update");
    expect(changed.record.target_id).toBe("sandbox");
    const d = changed.record.details as { before: Record<string, unknown>; after: Record<string, unknown> };
    expect(d.before.underpaymentTolerancePercent).toBe(0);
    expect(d.after.underpaymentTolerancePercent).toBe(1.5);
  });

  it("webhook URL through the dashboard and secret rotation", async () => {
    const url = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/webhook/url", {
          headers: bearer(),
          json: { webhookUrl: receiver.url() },
        }),
      200,
    );
    expect(url.record).toMatchObject({
      action: "webhook.url_update",
      actor_type: "user",
      actor_id: m.userId,
    });
    const secret = await one(
      () => call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", { method: "POST", headers: api() }),
      200,
    );
    expect(secret.record).toMatchObject({ action: "webhook.secret_rotate", actor_type: "api_key" });
    expect(JSON.stringify(secret.record.details)).not.toContain("whsec_");
  });

  it("a payout: one record, also when its Idempotency-Key is replayed; never the OTP", async () => {
    const otp = await mailedCode("payout");
    const send = () =>
      call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
        headers: { ...bearer(), "idempotency-key": "audit-payout-1" },
        json: { amount: 5, currencyType: TRC, walletAddress: TRON_TO, otp },
      });
    const paid = await one(send, 201);
    expect(paid.record).toMatchObject({
      action: "payout.create",
      target_type: "transaction",
      target_id: (paid.res.body as { data: { id: string } }).data.id,
      details: { amount: 5, currencyType: TRC, walletAddress: TRON_TO },
    });
    expect(JSON.stringify(paid.record.details)).not.toContain(otp);
    let replay: Awaited<ReturnType<typeof send>> | undefined;
    const none = await added(async () => {
      replay = await send();
    });
    expect(replay?.headers.get("idempotent-replayed")).toBe("true");
    expect(none).toEqual([]);
  });

  it("withdrawal approval (API key) and rejection (dashboard, with its reason)", async () => {
    const ask = () =>
      call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: api(),
        json: {
          amount: 1500,
          currencyType: TRC,
          walletAddress: TRON_TO,
          reference: `audit-${Math.random()}`,
        },
      });
    const w1 = await ask();
    expect(w1.status, w1.text).toBe(201);
    expect(w1.body.data.status).toBe("pending");
    const approved = await one(
      () =>
        call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${w1.body.data.id}/approve`, {
          method: "POST",
          headers: api(),
        }),
      200,
    );
    expect(approved.record).toMatchObject({
      action: "withdrawal.approve",
      actor_type: "api_key",
      target_type: "withdrawal_request",
      target_id: w1.body.data.id,
    });
    const w2 = await ask();
    expect(w2.status, w2.text).toBe(201);
    const rejected = await one(
      () =>
        call(svc.urls.sandbox, `/api/v1/dashboard/withdrawal-requests/${w2.body.data.id}/reject`, {
          headers: bearer(),
          json: { reason: "KYC mismatch" },
        }),
      200,
    );
    expect(rejected.record).toMatchObject({
      action: "withdrawal.reject",
      actor_type: "user",
      target_id: w2.body.data.id,
      details: { reason: "KYC mismatch" },
    });
    // Approving the rejected one is refused (409): no record.
    const refused = await added(() =>
      call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${w2.body.data.id}/approve`, {
        method: "POST",
        headers: api(),
      }),
    );
    expect(refused).toEqual([]);
  });

  it("an export records its filters", async () => {
    const exported = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv?status=confirmed&type=deposit", {
          headers: api(),
        }),
      200,
    );
    expect(exported.record).toMatchObject({
      action: "export.transactions",
      environment: "sandbox",
      details: { status: "confirmed", type: "deposit" },
    });
  });

  it("password change and enabling 2FA are account-wide", async () => {
    const otp = await mailedCode("password_change");
    const changed = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/auth/password/change", {
          headers: bearer(),
          json: { currentPassword: PASSWORD, newPassword: "another long passphrase 456", otp },
        }),
      200,
    );
    expect(changed.record).toMatchObject({
      action: "auth.password_change",
      environment: null,
      actor_id: m.userId,
    });
    const setup = await call(svc.urls.sandbox, "/api/v1/auth/2fa/setup", {
      method: "POST",
      headers: bearer(),
    });
    expect(setup.status, setup.text).toBe(200);
    expect((await rows()).some((r) => r.request_id === setup.headers.get("x-request-id"))).toBe(false);
    const code = await generate({ secret: setup.body.data.secret });
    const otp1 = await mailedCode("sensitive");
    const enabled = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/auth/2fa/enable", { headers: bearer(), json: { code, otp: otp1 } }),
      200,
    );
    expect(enabled.record).toMatchObject({ action: "auth.two_factor_enable", environment: null });

    // Disabling takes the step-up code and a TOTP code of a later step than the enabling one
    // (a step is accepted once; the server allows one step of drift).
    const totp = await generate({
      secret: setup.body.data.secret,
      epoch: (Math.floor(Date.now() / 30_000) + 1) * 30,
    });
    const otp2 = await mailedCode("sensitive");
    const disabled = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/auth/2fa/disable", { headers: bearer(), json: { otp: otp2, totp } }),
      200,
    );
    expect(disabled.record).toMatchObject({
      action: "auth.two_factor_disable",
      environment: null,
      actor_id: m.userId,
    });
  });
});

describe("GET /api/v1/dashboard/audit-log", () => {
  it("lists the merchant's own records, filtered, newest first; another merchant sees none of them", async () => {
    const all = await call(svc.urls.sandbox, "/api/v1/dashboard/audit-log?limit=100", { headers: bearer() });
    expect(all.status, all.text).toBe(200);
    const mine = (await rows()).filter((r) => r.merchant_id === m.merchantId);
    expect(all.body.pagination.total).toBe(mine.length);
    expect(all.body.data.map((r: { id: string }) => r.id)).toEqual(mine.map((r) => r.id).reverse());
    const keys = await call(svc.urls.sandbox, "/api/v1/dashboard/audit-log?action=api_key.rotate", {
      headers: bearer(),
    });
    expect(keys.body.data).toHaveLength(1);
    expect(keys.body.data[0]).toMatchObject({
      action: "api_key.rotate",
      actor: { type: "user", id: m.userId, email: m.email, role: "owner" },
      target: { type: "api_key" },
      clientIp: "127.0.0.1",
      userAgent: UA,
    });

    const other = await fundedMerchant(svc, receiver, {});
    const theirs = await call(svc.urls.sandbox, "/api/v1/dashboard/audit-log?limit=100", {
      headers: other.bearer,
    });
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.every((r: { actor: { id: string } }) => r.actor.id !== m.userId)).toBe(true);
  });

  it("refuses bad filters with 400 and no session with 401", async () => {
    for (const q of [
      "action=nope",
      "from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z",
      "environment=mainnet",
      "page=0",
    ]) {
      const r = await call(svc.urls.sandbox, `/api/v1/dashboard/audit-log?${q}`, { headers: bearer() });
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
    }
    const anonymous = await call(svc.urls.sandbox, "/api/v1/dashboard/audit-log");
    expect(anonymous.status).toBe(401);
    const withKey = await call(svc.urls.sandbox, "/api/v1/dashboard/audit-log", { headers: api() });
    expect(withKey.status).toBe(401);
  });
});

describe("append-only", () => {
  it("the database refuses update, delete and truncate", async () => {
    const db = svc.database.db;
    await expect(sql`update audit_log set action = 'auth.sign_in'`.execute(db)).rejects.toThrow(
      /append-only/,
    );
    await expect(sql`delete from audit_log`.execute(db)).rejects.toThrow(/append-only/);
    await expect(sql`truncate audit_log`.execute(db)).rejects.toThrow(/append-only/);
  });

  it("the retention purge removes only records older than its cut-off", async () => {
    const db = svc.database.db;
    const count = async () =>
      Number((await sql<{ n: string }>`select count(*)::text as n from audit_log`.execute(db)).rows[0]?.n);
    const total = await count();
    expect(total).toBeGreaterThan(5);
    expect(await purgeAuditLog(db, new Date(Date.now() - 86_400_000))).toBe(0);
    expect(await count()).toBe(total);
    expect(await purgeAuditLog(db, new Date(Date.now() + 86_400_000))).toBe(total);
    expect(await count()).toBe(0);
    // The purge's permission ended with its transaction.
    await sql`insert into audit_log (actor_type, action) values ('user', 'auth.sign_in')`.execute(db);
    await expect(sql`delete from audit_log`.execute(db)).rejects.toThrow(/append-only/);
  });
});

describe("password reset by e-mailed token (last: it ends every session)", () => {
  it("leaves one account-wide record naming the login whose password was reset", async () => {
    const forgot = await call(svc.urls.sandbox, "/api/v1/auth/password/forgot", { json: { email: m.email } });
    expect(forgot.status, forgot.text).toBe(200);
    // The mail is sent in the background after the answer (its timing must not reveal whether the
    // account exists), so it is waited for. Among the newest mails: a security notice of an earlier
    // step of this file (sent after its commit) may arrive after it. This file asks for one reset.
    const token = await waitFor(async () => {
      const mail = await call(svc.urls.sandbox, "/api/v1/dashboard/dev/mail?limit=20", { headers: bearer() });
      expect(mail.status, mail.text).toBe(200);
      return (mail.body.data as { text: string }[])
        .map((x) => /(prt_[A-Za-z0-9_-]+)/.exec(x.text)?.[1])
        .find((t) => t !== undefined);
    }, 30_000);
    const reset = await one(
      () =>
        call(svc.urls.sandbox, "/api/v1/auth/password/reset", {
          headers: { "user-agent": UA },
          json: { token, newPassword: "a third long passphrase 789" },
        }),
      200,
    );
    expect(reset.record).toMatchObject({
      action: "auth.password_reset",
      merchant_id: m.merchantId,
      environment: null,
      actor_type: "user",
      actor_id: m.userId,
      actor_email: m.email,
    });
    expect(JSON.stringify(reset.record)).not.toContain(token);
    // The token is spent: a second use is refused and writes nothing.
    const again = await added(() =>
      call(svc.urls.sandbox, "/api/v1/auth/password/reset", {
        json: { token, newPassword: "a fourth long passphrase 012" },
      }),
    );
    expect(again).toEqual([]);
  });
});
