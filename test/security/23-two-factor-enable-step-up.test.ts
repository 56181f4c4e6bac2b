import { generate } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/lib/clock.js";
import { Browser, outboxOtp } from "../dashboard/support.js";
import { type Call, startTestService, type TestService } from "../support/harness.js";

// Finding 7 of issue #34: turning 2FA on needed only a session, so whoever held a stolen session
// cookie could enrol its own authenticator and lock the owner out of the next sign-in. See
// docs/merchants/authentication.md#step-up-for-production-changes: 2FA enable and disable need a fresh e-mailed `sensitive` code (`otp`) — account-wide, in
// every environment —, plus the current TOTP (`totp`) when 2FA is on. docs/merchants/authentication.md#security-notifications: the account
// owner is e-mailed when 2FA is turned on or off.

const PASSWORD = "correct horse battery";
const clock = new ManualClock(Date.now());
let svc: TestService;
let seq = 0;

beforeAll(async () => {
  svc = await startTestService({ clock, env: { RATE_LIMIT_ENABLED: "false" } });
});
afterAll(() => svc?.close());

async function register() {
  const b = new Browser(svc.urls.production);
  const email = `twofa-on-${++seq}-${Date.now()}@example.com`;
  const r = await b.req("/api/v1/auth/register", {
    json: { email, password: PASSWORD, companyName: "T Co" },
  });
  expect(r.status, r.text).toBe(201);
  return { b, email };
}

async function otp(b: Browser) {
  clock.advance(1_000);
  return outboxOtp(b, "sensitive");
}

/** A TOTP code of a later 30-second step than the one before (each is accepted once). */
function totpOf(secret: string) {
  return async () => {
    clock.advance(30_000);
    return generate({ secret, epoch: Math.floor(clock.now() / 1000) });
  };
}

function refusedOn(r: Call, field: string, what: string) {
  expect(r.status, `${what}: ${r.text}`).toBe(400);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
}

const enabled = async (b: Browser) => (await b.req("/api/v1/auth/me")).body.data.user.totpEnabled as boolean;

/** The security notices mailed to `email` whose subject mentions `about`. */
async function notices(email: string, about: string) {
  const rows = await svc.database.db
    .selectFrom("mail_outbox")
    .select(["subject", "body"])
    .where("recipient", "=", email)
    .execute();
  return rows.filter((r) => r.subject.startsWith("stablegate security notice") && r.subject.includes(about));
}

describe("turning 2FA on needs the e-mailed step-up code (account-wide)", () => {
  it("a stolen session alone cannot enrol an authenticator, in production or the sandbox", async () => {
    const { b } = await register();
    // The thief: the victim's cookies copied into another client.
    const thief = new Browser(svc.urls.production);
    thief.cookies = new Map(b.cookies);
    const setup = await thief.req("/api/v1/auth/2fa/setup", { method: "POST" });
    expect(setup.status, setup.text).toBe(200);
    const totp = totpOf(setup.body.data.secret);
    refusedOn(await thief.req("/api/v1/auth/2fa/enable", { json: { code: await totp() } }), "otp", "no code");
    refusedOn(
      await thief.req("/api/v1/auth/2fa/enable", {
        json: { code: await totp() },
        headers: { "x-environment": "sandbox" },
      }),
      "otp",
      "no code, sandbox dashboard",
    );
    const onSandbox = new Browser(svc.urls.sandbox);
    onSandbox.cookies = thief.cookies;
    refusedOn(
      await onSandbox.req("/api/v1/auth/2fa/enable", { json: { code: await totp() } }),
      "otp",
      "no code, sandbox listener",
    );
    refusedOn(
      await thief.req("/api/v1/auth/2fa/enable", { json: { code: await totp(), otp: "123456" } }),
      "otp",
      "a guessed code",
    );
    expect(await enabled(b)).toBe(false);
  });

  it("with the right code it turns on; a wrong authenticator code gives the e-mailed code back; the owner is mailed", async () => {
    const { b, email } = await register();
    const setup = await b.req("/api/v1/auth/2fa/setup", { method: "POST" });
    const totp = totpOf(setup.body.data.secret);
    const code = await otp(b);
    const wrongTotp = await b.req("/api/v1/auth/2fa/enable", { json: { code: "000000", otp: code } });
    refusedOn(wrongTotp, "code", "a wrong authenticator code");
    expect(await enabled(b)).toBe(false);
    expect(await notices(email, "turned on")).toHaveLength(0);
    const on = await b.req("/api/v1/auth/2fa/enable", { json: { code: await totp(), otp: code } });
    expect(on.status, on.text).toBe(200);
    expect(await enabled(b)).toBe(true);
    const mailed = await notices(email, "two-factor authentication turned on");
    expect(mailed, "one notice to the owner").toHaveLength(1);
    expect(mailed[0]?.body).toContain(email);
    // The code is single use.
    const again = await b.req("/api/v1/auth/2fa/disable", { json: { otp: code, totp: await totp() } });
    refusedOn(again, "otp", "the enable code reused");
  });

  it("turning it off needs the e-mailed code and the TOTP; the owner is mailed once", async () => {
    const { b, email } = await register();
    const setup = await b.req("/api/v1/auth/2fa/setup", { method: "POST" });
    const totp = totpOf(setup.body.data.secret);
    expect(
      (await b.req("/api/v1/auth/2fa/enable", { json: { code: await totp(), otp: await otp(b) } })).status,
    ).toBe(200);
    refusedOn(
      await b.req("/api/v1/auth/2fa/disable", { json: { totp: await totp() } }),
      "otp",
      "off, no otp",
    );
    refusedOn(
      await b.req("/api/v1/auth/2fa/disable", { json: { otp: await otp(b) } }),
      "totp",
      "off, no totp",
    );
    expect(await enabled(b)).toBe(true);
    expect(await notices(email, "turned off")).toHaveLength(0);
    const off = await b.req("/api/v1/auth/2fa/disable", { json: { otp: await otp(b), totp: await totp() } });
    expect(off.status, off.text).toBe(200);
    expect(await enabled(b)).toBe(false);
    expect(await notices(email, "two-factor authentication turned off")).toHaveLength(1);
    expect(await notices(email, "two-factor authentication turned on")).toHaveLength(1);
  });
});
