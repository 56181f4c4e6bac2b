import { generate } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/lib/clock.js";
import { OutboxMailer } from "../../src/mail/outbox.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, invite, otpFor, registerOwner } from "../team/support.js";

// Finding 7 of issue #34, second half (docs/merchants/authentication.md#security-notifications): "the account owner (and the member concerned)
// is e-mailed when 2FA is turned on or off, a password changes, a production key pair is created or
// rotated, a member is invited, removed or changes role, or ownership moves." One mail per person
// per event: never lost (a failed send is retried by the worker), never duplicated (several
// workers draining the same queue send each mail once).

let svc: TestService;
let base: string;

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  base = svc.urls.sandbox;
});
afterAll(() => svc?.close());

const NOTICE = "stablegate security notice: ";

/** Every security notice in the outbox, as `recipient → subject` lines (sorted). */
async function notices(recipients: string[]): Promise<string[]> {
  const rows = await svc.database.db
    .selectFrom("mail_outbox")
    .select(["recipient", "subject"])
    .where("recipient", "in", recipients)
    .execute();
  return rows
    .filter((r) => r.subject.startsWith(NOTICE))
    .map((r) => `${r.recipient} → ${r.subject.slice(NOTICE.length)}`)
    .sort();
}

/** The notices an action added (recipient → subject), as a sorted list. */
async function added(recipients: string[], action: () => Promise<void>): Promise<string[]> {
  const before = await notices(recipients);
  await action();
  const after = await notices(recipients);
  for (const line of before) after.splice(after.indexOf(line), 1);
  return after;
}

async function ok(r: Promise<{ status: number; text: string }>, status = 200) {
  const res = await r;
  expect(res.status, res.text).toBe(status);
}

/** The audit log's writer and the notification worker (imported late: the HTTP test runs without them). */
const audit = () => import("../../src/audit/index.js") as Promise<Record<string, any>>;

const production = (h: Headers): Headers => ({ ...h, "x-environment": "production" });

describe("each security event mails the owner and the member concerned, once", () => {
  it("invitation, 2FA on/off, password change, production key pairs, role change, removal, ownership", {
    timeout: 180_000,
  }, async () => {
    const owner = await registerOwner(svc);
    const O = owner.email;

    // Invited by the owner: the owner is told (the invitee gets its invitation, not a notice).
    const inviteeEmail = `invitee-${Date.now()}@example.com`;
    expect(
      await added([O, inviteeEmail], async () =>
        ok(
          invite(base, owner.bearer, {
            email: inviteeEmail,
            role: "viewer",
            otp: await otpFor(base, owner.bearer),
          }),
          201,
        ),
      ),
    ).toEqual([`${O} → member invited`]);

    const admin = await addMember(svc, owner.bearer, "admin");
    const dev = await addMember(svc, owner.bearer, "developer");
    const A = admin.email;
    const D = dev.email;
    const all = [O, A, D];

    // Invited by an admin: the owner and the admin whose session invited.
    expect(
      await added(all, async () =>
        ok(
          invite(base, admin.bearer, {
            email: `x-${Date.now()}@example.com`,
            role: "viewer",
            otp: await otpFor(base, admin.bearer),
          }),
          201,
        ),
      ),
    ).toEqual([`${A} → member invited`, `${O} → member invited`]);

    // 2FA on and off by the admin (its own account).
    const setup = await call(base, "/api/v1/auth/2fa/setup", { method: "POST", headers: admin.bearer });
    expect(setup.status, setup.text).toBe(200);
    const secret = setup.body.data.secret as string;
    expect(
      await added(all, async () =>
        ok(
          call(base, "/api/v1/auth/2fa/enable", {
            headers: admin.bearer,
            json: { code: await generate({ secret }), otp: await otpFor(base, admin.bearer) },
          }),
        ),
      ),
    ).toEqual([`${A} → two-factor authentication turned on`, `${O} → two-factor authentication turned on`]);
    // The next step's code (the enable spent this step's).
    const nextStep = await generate({ secret, epoch: Math.floor(Date.now() / 1000) + 30 });
    expect(
      await added(all, async () =>
        ok(
          call(base, "/api/v1/auth/2fa/disable", {
            headers: admin.bearer,
            json: { otp: await otpFor(base, admin.bearer), totp: nextStep },
          }),
        ),
      ),
    ).toEqual([`${A} → two-factor authentication turned off`, `${O} → two-factor authentication turned off`]);

    // The admin changes its password.
    expect(
      await added(all, async () =>
        ok(
          call(base, "/api/v1/auth/password/change", {
            headers: admin.bearer,
            json: {
              currentPassword: "a long passphrase 123",
              newPassword: "another long passphrase 456",
              otp: await otpFor(base, admin.bearer, "password_change"),
            },
          }),
        ),
      ),
    ).toEqual([`${A} → password changed`, `${O} → password changed`]);

    // Key pairs: a sandbox pair tells nobody; a production pair, created or rotated, does.
    expect(
      await added(all, async () =>
        ok(call(base, "/api/v1/dashboard/api-keys", { headers: admin.bearer, json: {} }), 201),
      ),
    ).toEqual([]);
    let keyId = "";
    expect(
      await added(all, async () => {
        const r = await call(base, "/api/v1/dashboard/api-keys", {
          headers: production(admin.bearer),
          json: { environment: "production", otp: await otpFor(base, admin.bearer) },
        });
        expect(r.status, r.text).toBe(201);
        keyId = r.body.data.id;
      }),
    ).toEqual([`${A} → production API key pair created`, `${O} → production API key pair created`]);
    // Rotated from the sandbox dashboard: what counts is the pair's environment.
    expect(
      await added(all, async () =>
        ok(
          call(base, `/api/v1/dashboard/api-keys/${keyId}/rotate`, {
            headers: admin.bearer,
            json: { otp: await otpFor(base, admin.bearer) },
          }),
        ),
      ),
    ).toEqual([`${A} → production API key pair rotated`, `${O} → production API key pair rotated`]);

    // Role change and removal of the developer, by the owner.
    expect(
      await added(all, async () =>
        ok(
          call(base, `/api/v1/dashboard/members/${dev.userId}`, {
            method: "PATCH",
            headers: owner.bearer,
            json: { role: "viewer", otp: await otpFor(base, owner.bearer) },
          }),
        ),
      ),
    ).toEqual([`${D} → member role changed`, `${O} → member role changed`]);
    expect(
      await added(all, async () =>
        ok(
          call(base, `/api/v1/dashboard/members/${dev.userId}`, { method: "DELETE", headers: owner.bearer }),
        ),
      ),
    ).toEqual([`${D} → member removed`, `${O} → member removed`]);

    // Ownership moves to the admin: the new and the former owner.
    expect(
      await added(all, async () =>
        ok(
          call(base, `/api/v1/dashboard/members/${admin.userId}/transfer-ownership`, {
            headers: owner.bearer,
            json: { otp: await otpFor(base, owner.bearer) },
          }),
        ),
      ),
    ).toEqual([`${A} → account ownership transferred`, `${O} → account ownership transferred`]);

    // The mails name what happened, who did it and from where.
    const body = await svc.database.db
      .selectFrom("mail_outbox")
      .select("body")
      .where("recipient", "=", O)
      .where("subject", "=", `${NOTICE}production API key pair created`)
      .executeTakeFirstOrThrow();
    expect(body.body).toContain(A);
    expect(body.body).toContain("127.0.0.1");

    // The worker drains what is due: several of them at once send nothing more (nothing is due).
    const before = await notices(all);
    const { deliverSecurityNotifications } = await audit();
    const worker = () =>
      deliverSecurityNotifications(svc.database.db, {
        mailer: new OutboxMailer(svc.database.db, systemClock),
        clock: systemClock,
      });
    await Promise.all([worker(), worker(), worker()]);
    expect(await notices(all)).toEqual(before);
  });
});

describe("a notice is never lost nor sent twice", () => {
  // The outside review of #34's result: turning four-eyes off, or aiming production deliveries
  // elsewhere, told nobody. Production controls and the webhook target now mail the owner too.
  it("production settings, webhook URL and secret changes mail the owner and the actor; sandbox ones do not", {
    timeout: 120_000,
  }, async () => {
    const owner = await registerOwner(svc);
    const O = owner.email;
    const admin = await addMember(svc, owner.bearer, "admin");
    const A = admin.email;
    expect(
      await added([O, A], async () =>
        ok(
          call(base, "/api/v1/dashboard/settings", {
            method: "PATCH",
            headers: production(admin.bearer),
            json: { dualApprovalThreshold: { "USDT-TRC20": null }, otp: await otpFor(base, admin.bearer) },
          }),
        ),
      ),
    ).toEqual([`${A} → production settings changed`, `${O} → production settings changed`]);
    expect(
      await added([O, A], async () =>
        ok(
          call(base, "/api/v1/webhook/url", {
            headers: production(admin.bearer),
            json: { webhookUrl: "https://93.184.215.14/stablegate", otp: await otpFor(base, admin.bearer) },
          }),
        ),
      ),
    ).toEqual([`${A} → production webhook URL changed`, `${O} → production webhook URL changed`]);
    expect(
      await added([O, A], async () =>
        ok(
          call(base, "/api/v1/dashboard/settings", {
            method: "PATCH",
            headers: admin.bearer,
            json: { autoWithdraw: false },
          }),
        ),
      ),
    ).toEqual([]);
  });

  it("a failed send stays queued; of several workers draining at once, one sends each mail", async () => {
    const owner = await registerOwner(svc);
    const admin = await addMember(svc, owner.bearer, "admin");
    const smtpDown = {
      send: async () => {
        throw new Error("connect ECONNREFUSED 127.0.0.1:25");
      },
    };
    const { deliverSecurityNotifications, recordAudit } = await audit();
    // The record of a password change, written while mail is down.
    await recordAudit(
      svc.database.db,
      {
        merchantId: owner.merchantId,
        environment: null,
        actor: { type: "user", id: admin.userId, email: admin.email, role: "admin" },
        action: "auth.password_change",
        clientIp: "198.51.100.4",
        userAgent: "test",
        requestId: "req-down",
      },
      { mailer: smtpDown, clock: systemClock },
    );
    const recipients = [owner.email, admin.email];
    expect(await notices(recipients)).toEqual([`${owner.email} → member invited`]);

    // A retry waits for its back-off: move past it by draining with a clock a minute ahead.
    const later = { now: () => Date.now() + 60_000 };
    const worker = () =>
      deliverSecurityNotifications(svc.database.db, {
        mailer: new OutboxMailer(svc.database.db, systemClock),
        clock: later,
      });
    const sent = await Promise.all([worker(), worker(), worker(), worker()]);
    expect(sent.reduce((a, b) => a + b, 0)).toBe(2);
    expect(await notices(recipients)).toEqual([
      `${admin.email} → password changed`,
      `${owner.email} → member invited`,
      `${owner.email} → password changed`,
    ]);
    await Promise.all([worker(), worker()]);
    expect(await notices(recipients)).toHaveLength(3);
  });
});
