import { Writable } from "node:stream";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { accept, invite, mailedInvitation, otpFor, registerOwner } from "../team/support.js";
import { type Receiver, startReceiver } from "../webhooks/support.js";
import { balance, type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #36: the audit record is written in its action's transaction. When the record cannot be
// written (here: a trigger refuses the insert of one action), the request fails with 500 and the
// action did not happen; once the record can be written, the same request succeeds. And no audited
// route leaves its record to be written after its action's commit (the fallback logs an error).

const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const PASSWORD = "a long passphrase 123";

let svc: TestService;
let receiver: Receiver;
let m: Funded;
const logLines: string[] = [];

beforeAll(async () => {
  svc = await startTestService({
    env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" },
    logDestination: new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    }),
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 5000 });
  const db = svc.database.db;
  await sql`create table audit_refused (action text primary key)`.execute(db);
  await sql`create function audit_refused() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from audit_refused where action = new.action) then
        raise exception 'audit record refused (test)';
      end if;
      return new;
    end $$`.execute(db);
  await sql`create trigger audit_refused before insert on audit_log
    for each row execute function audit_refused()`.execute(db);
});
afterAll(async () => {
  await svc?.close();
  await receiver?.close();
});

async function records(action: string): Promise<number> {
  const n = await sql<{
    n: string;
  }>`select count(*)::text as n from audit_log where action = ${action}`.execute(svc.database.db);
  return Number(n.rows[0]?.n);
}

/** `act` while the record of `action` cannot be written: a 500; returns how many records it added. */
async function refused(action: string, act: () => Promise<{ status: number; text: string }>) {
  const db = svc.database.db;
  const before = await records(action);
  await sql`insert into audit_refused (action) values (${action})`.execute(db);
  try {
    const r = await act();
    expect(r.status, r.text).toBe(500);
    expect(JSON.parse(r.text).error.code).toBe("INTERNAL_ERROR");
  } finally {
    await sql`delete from audit_refused where action = ${action}`.execute(db);
  }
  return (await records(action)) - before;
}

async function mailedCode(purpose: string): Promise<string> {
  const sent = await call(svc.urls.sandbox, "/api/v1/auth/otp", { headers: m.bearer, json: { purpose } });
  expect(sent.status, sent.text).toBe(200);
  const mail = await call(svc.urls.sandbox, "/api/v1/dashboard/dev/mail?limit=1", { headers: m.bearer });
  const code = /\b(\d{6})\b/.exec(mail.body.data[0].text)?.[1];
  if (!code) throw new Error("no code in the mail");
  return code;
}

const keyCount = async () =>
  Number(
    (
      await sql<{
        n: string;
      }>`select count(*)::text as n from api_keys where merchant_id = ${m.merchantId}`.execute(
        svc.database.db,
      )
    ).rows[0]?.n,
  );

describe("a record that cannot be written rolls its action back", () => {
  it("API key create, rotate and revoke", async () => {
    const before = await keyCount();
    const create = () =>
      call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", {
        headers: m.bearer,
        json: { environment: "sandbox" },
      });
    expect(await refused("api_key.create", create)).toBe(0);
    expect(await keyCount()).toBe(before);
    const created = await create();
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as string;

    const rotate = () =>
      call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${id}/rotate`, { headers: m.bearer, json: {} });
    expect(await refused("api_key.rotate", rotate)).toBe(0);
    const revoke = () =>
      call(svc.urls.sandbox, `/api/v1/dashboard/api-keys/${id}`, { method: "DELETE", headers: m.bearer });
    expect(await refused("api_key.revoke", revoke)).toBe(0);
    const row = await sql<{ status: string }>`select status from api_keys where id = ${id}`.execute(
      svc.database.db,
    );
    expect(row.rows[0]?.status).toBe("active");
    expect(await keyCount()).toBe(before + 1);
    expect((await revoke()).status).toBe(200);
  });

  it("a settings change", async () => {
    const patch = () =>
      call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
        method: "PATCH",
        headers: m.bearer,
        json: { underpaymentTolerancePercent: 2.5 },
      });
    expect(await refused("settings.update", patch)).toBe(0);
    const read = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", { headers: m.bearer });
    expect(read.body.data.underpaymentTolerancePercent).toBe(0);
    expect((await patch()).status).toBe(200);
  });

  it("the webhook URL and its secret", async () => {
    const other = `${receiver.url()}/other`;
    const setUrl = () =>
      call(svc.urls.sandbox, "/api/v1/webhook/url", { headers: m.api, json: { webhookUrl: other } });
    expect(await refused("webhook.url_update", setUrl)).toBe(0);
    const url = await sql<{ url: string | null }>`select url from webhook_endpoints
      where merchant_id = ${m.merchantId} and environment = 'sandbox'`.execute(svc.database.db);
    expect(url.rows[0]?.url).toBe(receiver.url());

    const masked = async () =>
      (await call(svc.urls.sandbox, "/api/v1/webhook/secret", { headers: m.api })).body.data.webhookSecret;
    const before = await masked();
    const rotate = () =>
      call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", { method: "POST", headers: m.api });
    expect(await refused("webhook.secret_rotate", rotate)).toBe(0);
    expect(await masked()).toBe(before);
  });

  it("a withdrawal's approval and rejection", async () => {
    const ask = async () => {
      const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: m.api,
        json: { amount: 1500, currencyType: TRC, walletAddress: TRON_TO },
      });
      expect(r.status, r.text).toBe(201);
      expect(r.body.data.status).toBe("pending");
      return r.body.data.id as string;
    };
    const status = async (id: string) =>
      (await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${id}`, { headers: m.api })).body
        .data;

    const first = await ask();
    const approve = () =>
      call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${first}/approve`, {
        method: "POST",
        headers: m.api,
      });
    expect(await refused("withdrawal.approve", approve)).toBe(0);
    expect((await status(first)).status).toBe("pending");
    const approvals = await sql<{ n: string }>`select count(*)::text as n from withdrawal_approvals
      where transaction_id = ${first}`.execute(svc.database.db);
    expect(Number(approvals.rows[0]?.n)).toBe(0);

    const second = await ask();
    const held = await balance(svc, m.api, TRC);
    const reject = () =>
      call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${second}/reject`, {
        headers: m.api,
        json: { reason: "not today" },
      });
    expect(await refused("withdrawal.reject", reject)).toBe(0);
    expect((await status(second)).status).toBe("pending");
    expect(await balance(svc, m.api, TRC)).toEqual(held);
    expect((await reject()).status).toBe(200);
  });

  it("a payout: nothing held, its code and Idempotency-Key still usable", async () => {
    const before = await balance(svc, m.api, TRC);
    const otp = await mailedCode("payout");
    const send = () =>
      call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
        headers: { ...m.bearer, "idempotency-key": "rollback-payout-1" },
        json: { amount: 5, currencyType: TRC, walletAddress: TRON_TO, otp },
      });
    expect(await refused("payout.create", send)).toBe(0);
    expect(await balance(svc, m.api, TRC)).toEqual(before);
    const paid = await send();
    expect(paid.status, paid.text).toBe(201);
  });

  it("an invitation", async () => {
    const invite = async () =>
      call(svc.urls.sandbox, "/api/v1/dashboard/invitations", {
        headers: m.bearer,
        json: { email: "invitee@example.com", role: "viewer", otp: await mailedCode("sensitive") },
      });
    expect(await refused("member.invite", invite)).toBe(0);
    const rows = await sql<{ n: string }>`select count(*)::text as n from member_invitations
      where merchant_id = ${m.merchantId}`.execute(svc.database.db);
    expect(Number(rows.rows[0]?.n)).toBe(0);
  });

  it("a password change: the old password still signs in", async () => {
    const change = async () =>
      call(svc.urls.sandbox, "/api/v1/auth/password/change", {
        headers: m.bearer,
        json: {
          currentPassword: PASSWORD,
          newPassword: "another long passphrase 456",
          otp: await mailedCode("password_change"),
        },
      });
    expect(await refused("auth.password_change", change)).toBe(0);
    const login = await call(svc.urls.sandbox, "/api/v1/auth/login", {
      json: { email: m.email, password: PASSWORD },
      headers: { "x-token-delivery": "bearer" },
    });
    expect(login.status, login.text).toBe(200);
  });

  it("a sign-in: no session is issued", async () => {
    const sessions = async () =>
      Number(
        (
          await sql<{ n: string }>`select count(*)::text as n from dashboard_sessions`.execute(
            svc.database.db,
          )
        ).rows[0]?.n,
      );
    const before = await sessions();
    const login = () =>
      call(svc.urls.sandbox, "/api/v1/auth/login", {
        json: { email: m.email, password: PASSWORD },
        headers: { "x-token-delivery": "bearer" },
      });
    expect(await refused("auth.sign_in", login)).toBe(0);
    expect(await sessions()).toBe(before);
    const fine = await records("auth.sign_in");
    expect((await login()).status).toBe(200);
    expect(await records("auth.sign_in")).toBe(fine + 1);
  });

  it("the team: joining, a role change, a removal, an invitation revoked, ownership transferred", async () => {
    const owner = await registerOwner(svc);
    const base = svc.urls.sandbox;
    const db = svc.database.db;

    // Joining: the invitation stays pending and no login exists; then the same link works.
    const email = `join-${Date.now()}@example.com`;
    expect(
      (await invite(base, owner.bearer, { email, role: "viewer", otp: await otpFor(base, owner.bearer) }))
        .status,
    ).toBe(201);
    const { token } = await mailedInvitation(svc, email);
    expect(await refused("member.join", () => accept(base, token))).toBe(0);
    const login = await sql<{
      n: string;
    }>`select count(*)::text as n from dashboard_users where email = ${email}`.execute(db);
    expect(Number(login.rows[0]?.n)).toBe(0);
    const joined = await accept(base, token);
    expect(joined.status, joined.text).toBe(200);
    const memberId = joined.body.data.user.id as string;

    const roleOf = async (id: string) =>
      (
        await sql<{ r: string; removed: Date | null }>`select member_role as r, removed_at as removed
        from dashboard_users where id = ${id}`.execute(db)
      ).rows[0];
    const change = async () =>
      call(base, `/api/v1/dashboard/members/${memberId}`, {
        method: "PATCH",
        headers: owner.bearer,
        json: { role: "developer", otp: await otpFor(base, owner.bearer) },
      });
    expect(await refused("member.role_change", change)).toBe(0);
    expect((await roleOf(memberId))?.r).toBe("viewer");

    const transfer = async () =>
      call(base, `/api/v1/dashboard/members/${memberId}/transfer-ownership`, {
        headers: owner.bearer,
        json: { otp: await otpFor(base, owner.bearer) },
      });
    expect(await refused("ownership.transfer", transfer)).toBe(0);
    expect((await roleOf(memberId))?.r).toBe("viewer");
    expect((await roleOf(owner.userId))?.r).toBe("owner");

    const remove = () =>
      call(base, `/api/v1/dashboard/members/${memberId}`, { method: "DELETE", headers: owner.bearer });
    expect(await refused("member.remove", remove)).toBe(0);
    expect((await roleOf(memberId))?.removed).toBeNull();

    const other = `revoke-${Date.now()}@example.com`;
    const invited = await invite(base, owner.bearer, {
      email: other,
      role: "viewer",
      otp: await otpFor(base, owner.bearer),
    });
    expect(invited.status, invited.text).toBe(201);
    const revoke = () =>
      call(base, `/api/v1/dashboard/invitations/${invited.body.data.id}`, {
        method: "DELETE",
        headers: owner.bearer,
      });
    expect(await refused("member.invitation_revoke", revoke)).toBe(0);
    const still = await sql<{ revoked: Date | null }>`select revoked_at as revoked from member_invitations
      where id = ${invited.body.data.id}`.execute(db);
    expect(still.rows[0]?.revoked).toBeNull();
  });

  it("no audited route wrote its record after its action's commit", () => {
    const late = logLines.filter((l) => l.includes("audit record written after its action's commit"));
    expect(late, late.join("\n")).toEqual([]);
  });
});
