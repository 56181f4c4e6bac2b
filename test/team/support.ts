import { expect } from "vitest";
import { call, type TestService } from "../support/harness.js";

/**
 * Team accounts over HTTP as a dashboard client does them: Bearer sessions, step-up codes read from
 * the development outbox, invitation tokens read from the invitee's mail in that outbox.
 */

export const PASSWORD = "a long passphrase 123";

export type Headers = Record<string, string>;

/** A fresh e-mailed code for the signed-in login (step-up `sensitive`, or `payout`). */
export async function otpFor(base: string, headers: Headers, purpose = "sensitive"): Promise<string> {
  const mails = async () => {
    const r = await call(base, "/api/v1/dashboard/dev/mail?limit=100", { headers });
    expect(r.status, r.text).toBe(200);
    return r.body.data as { id: string; subject: string }[];
  };
  const before = new Set((await mails()).map((m) => m.id));
  const r = await call(base, "/api/v1/auth/otp", { headers, json: { purpose } });
  expect(r.status, r.text).toBe(200);
  const fresh = (await mails()).filter((m) => !before.has(m.id));
  const code = /code: (\d{6})/.exec(fresh[0]?.subject ?? "")?.[1];
  if (!code || fresh.length !== 1) throw new Error(`no single new code (${fresh.length} mails)`);
  return code;
}

/** The newest invitation token mailed to `email` (the invitee's mail, read from the outbox table). */
export async function mailedInvitation(
  svc: TestService,
  email: string,
): Promise<{ token: string; body: string }> {
  const row = await svc.database.db
    .selectFrom("mail_outbox")
    .select(["body", "created_at", "id"])
    .where("recipient", "=", email)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .executeTakeFirst();
  const token = /invitation token: (ivt_[A-Za-z0-9_-]+)/.exec(row?.body ?? "")?.[1];
  if (!row || !token) throw new Error(`no invitation mailed to ${email}`);
  return { token, body: row.body };
}

export function invite(base: string, headers: Headers, json: Record<string, unknown>) {
  return call(base, "/api/v1/dashboard/invitations", { headers, json });
}

export function accept(base: string, token: string, password = PASSWORD) {
  return call(base, "/api/v1/auth/invitations/accept", {
    headers: { "x-token-delivery": "bearer" },
    json: { token, password },
  });
}

export interface Member {
  email: string;
  userId: string;
  role: string;
  bearer: Headers;
}

/** Invites a new member with `role` (the owner's step-up code included), accepts, and signs it in (Bearer). */
export async function addMember(
  svc: TestService,
  owner: Headers,
  role: string,
  environment: "sandbox" | "production" = "sandbox",
): Promise<Member> {
  const base = svc.urls.sandbox;
  const email = `m-${role}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const otp = await otpFor(base, owner);
  const r = await invite(base, owner, { email, role, otp });
  expect(r.status, r.text).toBe(201);
  const { token } = await mailedInvitation(svc, email);
  const a = await accept(base, token);
  expect(a.status, a.text).toBe(200);
  return {
    email,
    role,
    userId: a.body.data.user.id as string,
    bearer: { authorization: `Bearer ${a.body.data.accessToken}`, "x-environment": environment },
  };
}

/** Registers a merchant on the dashboard: its owner's Bearer session and key pairs. */
export async function registerOwner(svc: TestService) {
  const email = `o-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: { email, password: PASSWORD, companyName: "Team Ltd" },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const keys = reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[];
  const pair = (env: string) => {
    const k = keys.find((x) => x.environment === env);
    if (!k) throw new Error(`no ${env} key pair`);
    return { apikey: k.apiKey, "x-api-secret": k.apiSecret };
  };
  return {
    email,
    userId: reg.body.data.user.id as string,
    merchantId: reg.body.data.user.merchantId as string,
    bearer: { authorization: `Bearer ${reg.body.data.accessToken}`, "x-environment": "sandbox" },
    sandboxApi: pair("sandbox"),
    productionApi: pair("production"),
  };
}
