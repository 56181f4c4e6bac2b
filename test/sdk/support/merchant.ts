import { expect } from "vitest";
import { Stablegate, type StablegateOptions } from "../../../packages/sdk/src/index.js";
import { call, type TestService } from "../../support/harness.js";
import { waitFor } from "../../webhooks/support.js";

/**
 * A sandbox merchant as a real one is made (dashboard register: a Bearer session and its key
 * pairs), with an SDK client on its sandbox pair. When `webhookUrl` is given, the client rotates
 * the webhook secret (the only way to read it in full) and points deliveries there.
 */
export async function sdkMerchant(
  svc: TestService,
  options: { webhookUrl?: string; client?: Partial<StablegateOptions> } = {},
) {
  const email = `sdk-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: { email, password: "a long passphrase 123", companyName: "SDK Shop" },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const keys = reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[];
  const sandbox = keys.find((k) => k.environment === "sandbox");
  const production = keys.find((k) => k.environment === "production");
  if (!sandbox || !production) throw new Error("register returned no key pairs");
  const client = new Stablegate({
    apiKey: sandbox.apiKey,
    apiSecret: sandbox.apiSecret,
    baseUrl: svc.urls.sandbox,
    ...options.client,
  });
  let webhookSecret: string | undefined;
  if (options.webhookUrl) {
    webhookSecret = (await client.webhooks.rotateSecret()).webhookSecret;
    await client.webhooks.setUrl(options.webhookUrl);
  }
  return {
    email,
    client,
    sandbox,
    production,
    webhookSecret,
    bearer: { authorization: `Bearer ${reg.body.data.accessToken}`, "x-environment": "sandbox" },
  };
}

export type SdkMerchant = Awaited<ReturnType<typeof sdkMerchant>>;

/** Funds the sandbox balance the way a customer would: a checkout session paid by the simulator. */
export async function fund(client: Stablegate, amount: number, currencyType: "USDT-TRC20" | "USDT-ERC20") {
  const session = await client.checkoutSessions.create({ amount, currencyType });
  await client.sandbox.payCheckoutSession(session.id);
  return waitFor(async () => {
    const s = await client.checkoutSessions.get(session.id);
    return s.status === "confirmed" ? s : null;
  }, 15_000);
}

/** Requests a payout OTP on the dashboard channel and reads it from the dev outbox. */
export async function payoutOtp(svc: TestService, bearer: Record<string, string>): Promise<string> {
  const sent = await call(svc.urls.sandbox, "/api/v1/auth/otp", {
    headers: bearer,
    json: { purpose: "payout" },
  });
  expect(sent.status, sent.text).toBe(200);
  const mail = await call(svc.urls.sandbox, "/api/v1/dashboard/dev/mail?limit=1", { headers: bearer });
  const code = /\b(\d{6})\b/.exec(mail.body.data[0].text)?.[1];
  if (!code) throw new Error("no OTP in the mail");
  return code;
}

/** A dashboard payout (payouts have no API-key create: docs/api-reference.md#dashboardcreatepayout). */
export async function createPayout(
  svc: TestService,
  bearer: Record<string, string>,
  body: { amount: number; currencyType: string; walletAddress: string },
): Promise<string> {
  const otp = await payoutOtp(svc, bearer);
  const r = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
    headers: bearer,
    json: { ...body, otp },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
}

export const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
