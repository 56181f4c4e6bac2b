import { generate } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin } from "../../src/auth/index.js";
import { ManualClock } from "../../src/lib/clock.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { Browser, ORIGIN, otpFrom, startSmtp } from "./support.js";

const clock = new ManualClock(Date.now());
let svc: TestService;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let n = 0;
const PASSWORD = "correct horse battery";
/** Asks register/login for the access token in the body too (non-browser clients). */
const BEARER = { "x-token-delivery": "bearer" };

beforeAll(async () => {
  smtp = await startSmtp();
  svc = await startTestService({ clock, env: { SMTP_URL: smtp.url, RATE_LIMIT_AUTH: "10000" } });
});
afterAll(async () => {
  await svc?.close();
  await smtp?.close();
});

async function registered(base = svc.urls.production, headers: Record<string, string> = {}) {
  const b = new Browser(base);
  const email = `user${++n}-${Date.now()}@example.com`;
  const r = await b.req("/api/v1/auth/register", {
    json: { email, password: PASSWORD, companyName: "Acme" },
    headers,
  });
  expect(r.status, r.text).toBe(201);
  return { b, email, body: r.body };
}

/** A step-up code (docs/merchants/authentication.md#step-up-for-production-changes, purpose `sensitive`) e-mailed to the user over SMTP. */
async function sensitiveCode(b: Browser, email: string): Promise<string> {
  const before = smtp.mails.length;
  const r = await b.req("/api/v1/auth/otp", { json: { purpose: "sensitive" } });
  expect(r.status, r.text).toBe(200);
  return otpFrom(await smtp.waitFor((m) => smtp.mails.indexOf(m) >= before && m.to.includes(email)));
}

describe("register, login, session", () => {
  it("registers, sets httpOnly cookies, and the session works by cookie and by Bearer on both base URLs", async () => {
    const { b, body, email } = await registered(svc.urls.production, BEARER);
    expect(body.data.user).toMatchObject({
      email,
      role: "merchant",
      totpEnabled: false,
      companyName: "Acme",
    });
    expect(body.data.apiKeys).toHaveLength(2);
    // A webhook secret per environment is created (sealed) at registration.
    const endpoints = await svc.database.db
      .selectFrom("webhook_endpoints")
      .select(["environment", "secret_sealed"])
      .where("merchant_id", "=", body.data.user.merchantId)
      .execute();
    expect(endpoints.map((e) => e.environment).sort()).toEqual(["production", "sandbox"]);
    expect(
      endpoints.every((e) => typeof e.secret_sealed === "string" && e.secret_sealed.startsWith("v1.")),
    ).toBe(true);
    const access = b.lastSetCookie.find((c) => c.startsWith("sg_access="));
    const refresh = b.lastSetCookie.find((c) => c.startsWith("sg_refresh="));
    expect(access).toMatch(/HttpOnly/i);
    expect(access).toMatch(/Path=\//);
    expect(refresh).toMatch(/HttpOnly/i);
    expect(refresh).toMatch(/Path=\/api\/v1\/auth/);
    expect(access).not.toMatch(/Secure/i);

    const me = await b.req("/api/v1/auth/me");
    expect(me.status).toBe(200);
    expect(me.body.data.environment).toBe("production");
    const sandbox = await call(svc.urls.sandbox, "/api/v1/auth/me", {
      headers: { authorization: `Bearer ${body.data.accessToken}` },
    });
    expect(sandbox.body.data.environment).toBe("sandbox");
    const switched = await b.req("/api/v1/auth/me", { headers: { "x-environment": "sandbox" } });
    expect(switched.body.data.environment).toBe("sandbox");
    expect((await b.req("/api/v1/auth/me", { headers: { "x-environment": "staging" } })).status).toBe(400);
    expect((await call(svc.urls.production, "/api/v1/auth/me")).status).toBe(401);
    expect(
      (await call(svc.urls.production, "/api/v1/auth/me", { headers: { authorization: "Bearer x.y.z" } }))
        .status,
    ).toBe(401);
  });

  it("registration refuses a taken e-mail, a short password and unknown fields", async () => {
    const { email } = await registered();
    const b = new Browser(svc.urls.production);
    const taken = await b.req("/api/v1/auth/register", {
      json: { email, password: PASSWORD, companyName: "X" },
    });
    expect(taken.status).toBe(400);
    const short = await b.req("/api/v1/auth/register", {
      json: { email: "new@example.com", password: "short", companyName: "X" },
    });
    expect(short.body.error.details.fields[0].field).toBe("password");
    const extra = await b.req("/api/v1/auth/register", {
      json: { email: "new2@example.com", password: PASSWORD, companyName: "X", role: "admin" },
    });
    expect(extra.status).toBe(400);
  });

  it("login failures look the same for an unknown e-mail and a wrong password; argon2id at rest", async () => {
    const { email } = await registered();
    const b = new Browser(svc.urls.production);
    const unknown = await b.req("/api/v1/auth/login", {
      json: { email: "nobody@example.com", password: PASSWORD },
    });
    const wrong = await b.req("/api/v1/auth/login", { json: { email, password: "wrong password!" } });
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    // The same answer but for the request id each error names (its own).
    expect({ ...unknown.body.error, requestId: "" }).toEqual({ ...wrong.body.error, requestId: "" });
    expect(unknown.body.error.requestId).not.toBe(wrong.body.error.requestId);
    const row = await svc.database.db
      .selectFrom("dashboard_users")
      .select("password_hash")
      .where("email", "=", email)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(
      (await b.req("/api/v1/auth/login", { json: { email: email.toUpperCase(), password: PASSWORD } }))
        .status,
    ).toBe(200);
  });

  it("throttles an (account, address) progressively after repeated failures, even for the right password", async () => {
    const { email } = await registered();
    const b = new Browser(svc.urls.production);
    for (let i = 0; i < 5; i++) {
      expect(
        (await b.req("/api/v1/auth/login", { json: { email, password: `wrong ${i} password` } })).status,
      ).toBe(401);
    }
    // From this address the account is refused for a minute (429, Retry-After), right password or not.
    const locked = await b.req("/api/v1/auth/login", { json: { email, password: PASSWORD } });
    expect(locked.status).toBe(429);
    expect(locked.headers.get("retry-after")).toBe("60");
    clock.advance(61_000);
    // One more failure after the first lock doubles it (2 minutes).
    expect((await b.req("/api/v1/auth/login", { json: { email, password: "wrong again pw" } })).status).toBe(
      401,
    );
    clock.advance(61_000);
    expect((await b.req("/api/v1/auth/login", { json: { email, password: PASSWORD } })).status).toBe(429);
    clock.advance(61_000);
    const ok = await b.req("/api/v1/auth/login", { json: { email, password: PASSWORD } });
    expect(ok.status).toBe(200);
  });

  it("refresh rotates; a reused refresh token revokes the whole family", async () => {
    const { b } = await registered();
    const first = b.cookies.get("sg_refresh") as string;
    const r1 = await b.req("/api/v1/auth/refresh", { method: "POST" });
    expect(r1.status).toBe(200);
    const second = b.cookies.get("sg_refresh") as string;
    expect(second).not.toBe(first);
    expect((await b.req("/api/v1/auth/me")).status).toBe(200);

    // An attacker replays the first (rotated) token.
    const thief = new Browser(svc.urls.production);
    thief.cookies.set("sg_refresh", first);
    expect((await thief.req("/api/v1/auth/refresh", { method: "POST" })).status).toBe(401);
    // The family is gone: the victim's current refresh token and access token stop working.
    expect((await b.req("/api/v1/auth/me")).status).toBe(401);
    expect((await b.req("/api/v1/auth/refresh", { method: "POST" })).status).toBe(401);
  });

  it("access tokens expire; logout ends the session at once", async () => {
    const { b, body } = await registered(svc.urls.production, BEARER);
    const bearer = { authorization: `Bearer ${body.data.accessToken}` };
    expect((await call(svc.urls.production, "/api/v1/auth/me", { headers: bearer })).status).toBe(200);
    const lo = await b.req("/api/v1/auth/logout", { method: "POST" });
    expect(lo.status).toBe(200);
    expect((await call(svc.urls.production, "/api/v1/auth/me", { headers: bearer })).status).toBe(401);

    const again = await registered();
    clock.advance(16 * 60_000);
    expect((await again.b.req("/api/v1/auth/me")).status).toBe(401);
    expect((await again.b.req("/api/v1/auth/refresh", { method: "POST" })).status).toBe(200);
    expect((await again.b.req("/api/v1/auth/me")).status).toBe(200);
  });
});

describe("OTP and password mails over SMTP", () => {
  it("e-mails a 6-digit OTP; change password needs it; reused, wrong-purpose, expired and 5-times-wrong codes fail", async () => {
    const { b, email } = await registered();
    const ask = async (purpose: string) => {
      const before = smtp.mails.length;
      const r = await b.req("/api/v1/auth/otp", { json: { purpose } });
      expect(r.status, r.text).toBe(200);
      const mail = await smtp.waitFor((m) => smtp.mails.indexOf(m) >= before && m.to.includes(email));
      return otpFrom(mail);
    };
    const change = (otp: string, newPassword = "brand new password 1") =>
      b.req("/api/v1/auth/password/change", { json: { currentPassword: PASSWORD, newPassword, otp } });

    // Wrong purpose: a payout code does not change a password.
    const payoutCode = await ask("payout");
    expect((await change(payoutCode)).status).toBe(400);

    // Expired.
    const expiring = await ask("password_change");
    clock.advance(601_000);
    expect((await change(expiring)).body.error.details.fields[0].field).toBe("otp");

    // Five wrong tries burn the code.
    const burnt = await ask("password_change");
    for (let i = 0; i < 5; i++) {
      const wrong = String((Number(burnt) + 1 + i) % 1_000_000).padStart(6, "0");
      expect((await change(wrong)).status).toBe(400);
    }
    expect((await change(burnt)).status).toBe(400);

    // Valid once, then reused.
    const good = await ask("password_change");
    const ok = await change(good);
    expect(ok.status, ok.text).toBe(200);
    const reuse = await b.req("/api/v1/auth/password/change", {
      json: { currentPassword: "brand new password 1", newPassword: "another password 2", otp: good },
    });
    expect(reuse.status).toBe(400);
    // The OTP is stored only as a keyed hash.
    const rows = await svc.database.db.selectFrom("dashboard_otps").select("code_hash").execute();
    expect(rows.every((r) => !Buffer.from(r.code_hash).toString("utf8").includes(good))).toBe(true);
    const login = await new Browser(svc.urls.production).req("/api/v1/auth/login", {
      json: { email, password: "brand new password 1" },
    });
    expect(login.status).toBe(200);
  });

  it("forgot → reset: single-use token by mail, every session ends; unknown e-mails get the same answer", async () => {
    const { b, email } = await registered();
    const none = await new Browser(svc.urls.production).req("/api/v1/auth/password/forgot", {
      json: { email: "ghost@example.com" },
    });
    const r = await new Browser(svc.urls.production).req("/api/v1/auth/password/forgot", { json: { email } });
    expect(r.status).toBe(200);
    expect(none.body).toEqual(r.body);
    const mail = await smtp.waitFor((m) => m.to.includes(email) && /Reset/.test(m.subject));
    const token = /(prt_[A-Za-z0-9_-]+)/.exec(mail.text)?.[1] as string;
    expect(token).toBeDefined();
    const reset = await new Browser(svc.urls.production).req("/api/v1/auth/password/reset", {
      json: { token, newPassword: "reset password 123" },
    });
    expect(reset.status, reset.text).toBe(200);
    expect((await b.req("/api/v1/auth/me")).status).toBe(401);
    const reused = await new Browser(svc.urls.production).req("/api/v1/auth/password/reset", {
      json: { token, newPassword: "reset password 456" },
    });
    expect(reused.status).toBe(400);
    const login = await new Browser(svc.urls.production).req("/api/v1/auth/login", {
      json: { email, password: "reset password 123" },
    });
    expect(login.status).toBe(200);
  });
});

describe("TOTP", () => {
  it("is required at login once enabled; codes are single use; disable needs a code", async () => {
    const { b, email } = await registered();
    const setup = await b.req("/api/v1/auth/2fa/setup", { method: "POST" });
    expect(setup.status).toBe(200);
    expect(setup.body.data.otpauthUri).toMatch(/^otpauth:\/\/totp\//);
    expect(setup.body.data.qrCode).toMatch(/^data:image\/png;base64,/);
    const secret = setup.body.data.secret as string;
    const code = () => generate({ secret, epoch: Math.floor(clock.now() / 1000) });
    const stored = await svc.database.db
      .selectFrom("dashboard_users")
      .select("totp_secret")
      .where("email", "=", email)
      .executeTakeFirstOrThrow();
    expect(stored.totp_secret).toMatch(/^v1\./);
    expect(stored.totp_secret).not.toContain(secret);

    expect((await b.req("/api/v1/auth/2fa/enable", { json: { code: "000000" } })).status).toBe(400);
    // Turning 2FA on needs the e-mailed step-up code too (docs/merchants/authentication.md#step-up-for-production-changes, issue #34 finding 7).
    const onOtp = await sensitiveCode(b, email);
    expect(
      (await b.req("/api/v1/auth/2fa/enable", { json: { code: await code(), otp: onOtp } })).status,
    ).toBe(200);

    const c = new Browser(svc.urls.production);
    const noTotp = await c.req("/api/v1/auth/login", { json: { email, password: PASSWORD } });
    expect(noTotp.status).toBe(401);
    expect(noTotp.body.error.details.totpRequired).toBe(true);
    clock.advance(30_000);
    const now = await code();
    expect(
      (await c.req("/api/v1/auth/login", { json: { email, password: PASSWORD, totp: now } })).status,
    ).toBe(200);
    // The same code a second time is refused (replay).
    expect(
      (await c.req("/api/v1/auth/login", { json: { email, password: PASSWORD, totp: now } })).status,
    ).toBe(401);

    clock.advance(30_000);
    const otp = await sensitiveCode(c, email);
    expect((await c.req("/api/v1/auth/2fa/disable", { json: { otp, totp: await code() } })).status).toBe(200);
    expect((await c.req("/api/v1/auth/login", { json: { email, password: PASSWORD } })).status).toBe(200);
  });
});

describe("API keys and settings", () => {
  it("creates, lists (no secrets), rotates (old pair dead at once on the API-key channel) and revokes", async () => {
    const { b, body, email } = await registered();
    const original = body.data.apiKeys.find((k: { environment: string }) => k.environment === "production");
    const auth = (k: { apiKey: string; apiSecret: string }) => ({
      apikey: k.apiKey,
      "x-api-secret": k.apiSecret,
    });
    expect(
      (await call(svc.urls.production, "/api/v1/public/account", { headers: auth(original) })).status,
    ).toBe(200);

    const listed = await b.req("/api/v1/dashboard/api-keys");
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(original.apiSecret);

    const rotated = await b.req(`/api/v1/dashboard/api-keys/${original.id}/rotate`, {
      json: { otp: await sensitiveCode(b, email) },
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(
      (await call(svc.urls.production, "/api/v1/public/account", { headers: auth(original) })).status,
    ).toBe(403);
    expect(
      (await call(svc.urls.production, "/api/v1/public/account", { headers: auth(rotated.body.data) }))
        .status,
    ).toBe(200);
    expect(
      (
        await b.req(`/api/v1/dashboard/api-keys/${original.id}/rotate`, {
          json: { otp: await sensitiveCode(b, email) },
        })
      ).status,
    ).toBe(409);

    const created = await b.req("/api/v1/dashboard/api-keys", { json: { environment: "sandbox" } });
    expect(created.status).toBe(201);
    expect(created.body.data.apiKey).toMatch(/^ak_test_/);
    const revoked = await b.req(`/api/v1/dashboard/api-keys/${created.body.data.id}`, { method: "DELETE" });
    expect(revoked.body.data).toMatchObject({ status: "revoked", revokedReason: "revoked" });
    expect(
      (await call(svc.urls.sandbox, "/api/v1/public/account", { headers: auth(created.body.data) })).status,
    ).toBe(403);

    // Another merchant's key is not found.
    const other = await registered();
    expect(
      (await other.b.req(`/api/v1/dashboard/api-keys/${rotated.body.data.id}`, { method: "DELETE" })).status,
    ).toBe(404);
  });

  it("settings: per environment, thresholds in USDT, validated allowlist", async () => {
    const { b, email } = await registered();
    const got = await b.req("/api/v1/dashboard/settings");
    expect(got.body.data).toMatchObject({
      environment: "production",
      autoWithdraw: true,
      autoApproveThreshold: { "USDT-TRC20": 1000, "USDT-ERC20": 1000 },
      ipAllowlist: [],
    });
    const patched = await b.req("/api/v1/dashboard/settings", {
      method: "PATCH",
      json: {
        autoWithdraw: false,
        autoApproveThreshold: { "USDT-TRC20": 12.5 },
        ipAllowlist: ["10.0.0.0/8", "2001:db8::1"],
        otp: await sensitiveCode(b, email),
      },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({
      autoWithdraw: false,
      autoApproveThreshold: { "USDT-TRC20": 12.5, "USDT-ERC20": 1000 },
      ipAllowlist: ["10.0.0.0/8", "2001:db8::1"],
    });
    const sandbox = await b.req("/api/v1/dashboard/settings", { headers: { "x-environment": "sandbox" } });
    expect(sandbox.body.data.autoWithdraw).toBe(true);
    const bad = await b.req("/api/v1/dashboard/settings", {
      method: "PATCH",
      json: {
        autoApproveThreshold: { "USDT-TRC20": 1.1234567, DOGE: 1 },
        ipAllowlist: ["10.0.0.0/33"],
        otp: await sensitiveCode(b, email),
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual([
      "autoApproveThreshold.DOGE",
      "autoApproveThreshold.USDT-TRC20",
      "ipAllowlist[0]",
    ]);
  });
});

describe("CORS and Origin check", () => {
  it("refuses cookie-authenticated writes from a foreign or missing Origin; Bearer needs none", async () => {
    const { b, body, email } = await registered(svc.urls.production, BEARER);
    const patch = { method: "PATCH", json: { autoWithdraw: false, otp: await sensitiveCode(b, email) } };
    b.origin = "https://evil.example";
    expect((await b.req("/api/v1/dashboard/settings", patch)).status).toBe(403);
    b.origin = undefined;
    expect((await b.req("/api/v1/dashboard/settings", patch)).status).toBe(403);
    expect((await b.req("/api/v1/dashboard/settings")).status).toBe(200); // reads are fine
    b.origin = ORIGIN;
    expect((await b.req("/api/v1/dashboard/settings", patch)).status).toBe(200);
    const bearer = await call(svc.urls.production, "/api/v1/dashboard/settings", {
      method: "PATCH",
      json: { autoWithdraw: true, otp: await sensitiveCode(b, email) },
      headers: { authorization: `Bearer ${body.data.accessToken}` },
    });
    expect(bearer.status).toBe(200);
  });

  it("answers preflights for dashboard routes from allowed origins only; API-key paths get no CORS headers", async () => {
    const pre = (path: string, origin: string) =>
      call(svc.urls.production, path, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "PATCH" },
      });
    const good = await pre("/api/v1/dashboard/settings", ORIGIN);
    expect(good.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(good.headers.get("access-control-allow-credentials")).toBe("true");
    const evil = await pre("/api/v1/dashboard/settings", "https://evil.example");
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
    const api = await call(svc.urls.production, "/api/v1/public/account", { headers: { origin: ORIGIN } });
    expect(api.headers.get("access-control-allow-origin")).toBeNull();
    // An OPTIONS that is no preflight: a 400 in the contract's envelope, never plain text.
    const bareHeaders: Record<string, string>[] = [
      {},
      { origin: ORIGIN },
      { "access-control-request-method": "GET" },
    ];
    for (const headers of bareHeaders) {
      const bare = await call(svc.urls.production, "/api/v1/admin/chain-costs", {
        method: "OPTIONS",
        headers,
      });
      expect(bare.status, JSON.stringify(headers)).toBe(400);
      expect(bare.body, JSON.stringify(headers)).toMatchObject({
        success: false,
        error: { code: "VALIDATION_ERROR", requestId: expect.any(String) },
      });
    }
  });
});

describe("admin", () => {
  it("reads merchants; every write is 403; merchants cannot use admin views", async () => {
    const email = `admin${Date.now()}@example.com`;
    await createAdmin(svc.database.db, { email, password: PASSWORD });
    const a = new Browser(svc.urls.production);
    expect((await a.req("/api/v1/auth/login", { json: { email, password: PASSWORD } })).status).toBe(200);
    const m = await svc.createMerchant();
    const listed = await a.req("/api/v1/admin/merchants?limit=100");
    expect(listed.status).toBe(200);
    expect(listed.body.data.some((x: { id: string }) => x.id === m.id)).toBe(true);
    expect((await a.req(`/api/v1/admin/merchants/${m.id}`)).body.data.activeApiKeys).toEqual({
      production: 1,
      sandbox: 1,
    });
    expect((await a.req(`/api/v1/admin/merchants/${m.id}`, { method: "PATCH", json: {} })).status).toBe(403);
    expect((await a.req("/api/v1/admin/merchants", { json: { email: "x@example.com" } })).status).toBe(403);
    expect(
      (await a.req("/api/v1/dashboard/settings", { method: "PATCH", json: { autoWithdraw: false } })).status,
    ).toBe(403);
    expect((await a.req("/api/v1/dashboard/api-keys", { json: {} })).status).toBe(403);

    const { b } = await registered();
    expect((await b.req("/api/v1/admin/merchants")).status).toBe(403);
    expect((await new Browser(svc.urls.production).req("/api/v1/admin/merchants", { json: {} })).status).toBe(
      401,
    );
    expect(keysOf(m, "production").apiKey).toMatch(/^ak_live_/);
  });
});
