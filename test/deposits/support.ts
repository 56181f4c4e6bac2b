import { expect } from "vitest";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { call, keysOf, type TestService } from "../support/harness.js";
import type { Receiver } from "../webhooks/support.js";

/** A merchant with sandbox keys, its webhook URL pointed at `receiver` and the full webhook secret. */
export async function sandboxMerchant(svc: TestService, receiver: Receiver, path = "/hook") {
  const merchant = await svc.createMerchant();
  const k = keysOf(merchant, "sandbox");
  const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
  const url = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
    headers,
    json: { webhookUrl: receiver.url(path) },
  });
  expect(url.status, url.text).toBe(200);
  const rotated = await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", { method: "POST", headers });
  expect(rotated.status, rotated.text).toBe(200);
  return { merchant, headers, webhookSecret: rotated.body.data.webhookSecret as string };
}

export type SandboxMerchant = Awaited<ReturnType<typeof sandboxMerchant>> & { merchant: CreatedMerchant };

export async function balanceOf(svc: TestService, headers: Record<string, string>, currencyType: string) {
  const r = await call(svc.urls.sandbox, "/api/v1/public/balance", { headers });
  expect(r.status, r.text).toBe(200);
  const line = (r.body.data as { currencyType: string; available: number; held: number }[]).find(
    (b) => b.currencyType === currencyType,
  );
  return line ?? { currencyType, available: 0, held: 0 };
}

/** Webhook bodies the receiver got for a transaction, in arrival order. */
export function hooksFor(receiver: Receiver, transactionId: string) {
  return receiver.received
    .map((r) => ({ r, body: JSON.parse(r.raw.toString("utf8")) }))
    .filter((x) => x.body.data?.transactionId === transactionId);
}
