import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/lib/clock.js";
import { Browser, outboxOtp } from "../dashboard/support.js";
import { type Call, startTestService, type TestService } from "../support/harness.js";

// Issue #34, "seen in the code": an e-mailed step-up code was bound to the account, not to the
// session that asked for it. Whoever signed in to the same account elsewhere (a second session
// of a thief who knows the password, or any other session) could spend a code the owner's session
// requested. Now a code (`sensitive`, `payout`, `password_change`) works only in the session that
// requested it; a refresh keeps the session (the code stays usable there).

const PASSWORD = "correct horse battery";
const TRC = "USDT-TRC20";
const clock = new ManualClock(Date.now());
let svc: TestService;
let seq = 0;

beforeAll(async () => {
  svc = await startTestService({
    clock,
    env: { RATE_LIMIT_ENABLED: "false", ERC20_RPC_URL: "http://127.0.0.1:9" },
  });
});
afterAll(() => svc?.close());

/** One account, two sessions: `a` (registered) and `b` (a second sign-in of the same login). */
async function twoSessions() {
  const a = new Browser(svc.urls.production);
  const email = `bound-${++seq}-${Date.now()}@example.com`;
  const r = await a.req("/api/v1/auth/register", {
    json: { email, password: PASSWORD, companyName: "B Co" },
  });
  expect(r.status, r.text).toBe(201);
  const b = new Browser(svc.urls.production);
  const login = await b.req("/api/v1/auth/login", { json: { email, password: PASSWORD } });
  expect(login.status, login.text).toBe(200);
  return { a, b, email };
}

async function code(who: Browser, purpose: "sensitive" | "payout" | "password_change" = "sensitive") {
  clock.advance(1_000);
  // outboxOtp reads the `code: NNNNNN` subject, whatever the purpose.
  return outboxOtp(who, purpose as "sensitive");
}

function refusedOn(r: Call, field: string, what: string) {
  expect(r.status, `${what}: ${r.text}`).toBe(400);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  expect(
    r.body.error.details.fields.map((f: { field: string }) => f.field),
    `${what}: ${r.text}`,
  ).toContain(field);
}

const settings = async (who: Browser) => (await who.req("/api/v1/dashboard/settings")).body.data;

describe("an e-mailed code works only in the session that requested it", () => {
  it("sensitive: session B cannot spend session A's code; A still can (after a refresh too)", async () => {
    const { a, b } = await twoSessions();
    const before = await settings(a);
    const c = await code(a);
    const patch = (who: Browser, otp: string) =>
      who.req("/api/v1/dashboard/settings", {
        method: "PATCH",
        json: { autoApproveThreshold: { [TRC]: 1_000_000_000 }, otp },
      });
    refusedOn(await patch(b, c), "otp", "A's code in session B");
    expect(await settings(a)).toEqual(before);
    // B's refusal neither spent nor retired A's code; a refresh keeps A's session and its code.
    const refreshed = await a.req("/api/v1/auth/refresh", { method: "POST" });
    expect(refreshed.status, refreshed.text).toBe(200);
    const done = await patch(a, c);
    expect(done.status, done.text).toBe(200);
    expect((await settings(a)).autoApproveThreshold[TRC]).toBe(1_000_000_000);
  });

  it("a production key pair and 2FA disable: A's code is refused in B", async () => {
    const { a, b } = await twoSessions();
    const keys = async () =>
      (await a.req("/api/v1/dashboard/api-keys", { headers: { "x-environment": "production" } })).body.data
        .length as number;
    const n = await keys();
    refusedOn(
      await b.req("/api/v1/dashboard/api-keys", { json: { environment: "production", otp: await code(a) } }),
      "otp",
      "key pair create",
    );
    expect(await keys()).toBe(n);
    refusedOn(
      await b.req("/api/v1/auth/2fa/disable", { json: { otp: await code(a) } }),
      "otp",
      "2FA disable",
    );
  });

  it("payout (production and sandbox): A's payout code is refused in B before anything else", async () => {
    const { a, b } = await twoSessions();
    const payout = (who: Browser, otp: string, environment: "production" | "sandbox") =>
      who.req("/api/v1/dashboard/payouts", {
        json: {
          amount: 10,
          currencyType: environment === "production" ? "USDT-ERC20" : TRC,
          walletAddress:
            environment === "production"
              ? "0x1234567890123456789012345678901234567890" // neither the gateway's nor a burn address
              : "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW",
          otp,
        },
        headers: { "x-environment": environment },
      });
    refusedOn(await payout(b, await code(a, "payout"), "production"), "otp", "production payout");
    refusedOn(await payout(b, await code(a, "payout"), "sandbox"), "otp", "sandbox payout");
    // In A the same kind of code gets past the step-up (refused for the balance: there is none).
    const through = await payout(a, await code(a, "payout"), "production");
    expect(through.status, through.text).toBe(422);
    expect(through.body.error.code).toBe("INSUFFICIENT_BALANCE");
  });

  it("password change: A's code is refused in B", async () => {
    const { a, b } = await twoSessions();
    const c = await code(a, "password_change");
    const change = (who: Browser) =>
      who.req("/api/v1/auth/password/change", {
        json: { currentPassword: PASSWORD, newPassword: "another long passphrase 9", otp: c },
      });
    refusedOn(await change(b), "otp", "password change");
    const done = await change(a);
    expect(done.status, done.text).toBe(200);
  });
});
