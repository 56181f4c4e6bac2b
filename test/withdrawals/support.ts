import { expect } from "vitest";
import { verifyLedger } from "../../src/ledger/verify.js";
import { call, type TestService } from "../support/harness.js";
import { type Receiver, waitFor } from "../webhooks/support.js";

/**
 * A merchant as a real one is made: registered on the dashboard (a Bearer session and its key pairs), its webhook URL pointed at `receiver`, and its balance funded by a real
 * sandbox deposit (checkout session paid by the simulator, confirmed by the watcher).
 */
export async function fundedMerchant(svc: TestService, receiver: Receiver, fund: Record<string, number>) {
  const email = `w-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: { email, password: "a long passphrase 123", companyName: "Payouts Ltd" },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const bearer = { authorization: `Bearer ${reg.body.data.accessToken}`, "x-environment": "sandbox" };
  const pair = (reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[]).find(
    (k) => k.environment === "sandbox",
  );
  if (!pair) throw new Error("register returned no sandbox key pair");
  const api = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
  const hook = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
    headers: api,
    json: { webhookUrl: receiver.url() },
  });
  expect(hook.status, hook.text).toBe(200);
  for (const [currencyType, amount] of Object.entries(fund)) {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: api,
      json: { amount, currencyType },
    });
    expect(s.status, s.text).toBe(201);
    const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: api,
      json: {},
    });
    expect(pay.status, pay.text).toBe(202);
    await waitFor(async () => {
      const r = await call(svc.urls.sandbox, `/checkout/session/${s.body.data.id}`, { headers: api });
      return r.body.data.status === "confirmed";
    }, 15_000);
  }
  return {
    email,
    bearer,
    api,
    merchantId: reg.body.data.user.merchantId as string,
    userId: reg.body.data.user.id as string,
  };
}

export type Funded = Awaited<ReturnType<typeof fundedMerchant>>;

export async function balance(svc: TestService, api: Record<string, string>, currencyType: string) {
  const r = await call(svc.urls.sandbox, "/api/v1/public/balance", { headers: api });
  const line = (r.body.data as { currencyType: string; available: number; held: number }[]).find(
    (b) => b.currencyType === currencyType,
  );
  return { available: line?.available ?? 0, held: line?.held ?? 0 };
}

/** Statuses of the webhooks received for a transaction, in order. */
export function hookStatuses(receiver: Receiver, transactionId: string): string[] {
  return receiver.received
    .map((r) => JSON.parse(r.raw.toString("utf8")))
    .filter((b) => b.data?.transactionId === transactionId)
    .map((b) => b.data.status as string);
}

export async function expectLedgerOk(svc: TestService) {
  const report = await verifyLedger(svc.database.db);
  expect(report.ok, JSON.stringify(report.problems)).toBe(true);
}

/**
 * What the ledger keeps of one chain's custody as frozen (coins on own addresses the issuer froze)
 * and written off (destroyed there): its system accounts `frozen` and `written_off`, as positive
 * base units (issue #40).
 */
export async function frozenCustody(svc: TestService, currencyType: string, environment = "sandbox") {
  const rows = await svc.database.db
    .selectFrom("ledger_entries as e")
    .innerJoin("ledger_accounts as a", "a.id", "e.account_id")
    .select(["a.kind", (eb) => eb.fn.sum<string>("e.amount").as("sum")])
    .where("a.owner", "=", "system")
    .where("a.environment", "=", environment as "sandbox")
    .where("a.currency_type", "=", currencyType as "USDT-ERC20")
    .where("a.kind", "in", ["frozen", "written_off"])
    .groupBy("a.kind")
    .execute();
  const of = (k: string) => -BigInt(rows.find((r) => r.kind === k)?.sum ?? 0);
  return { frozen: of("frozen"), writtenOff: of("written_off") };
}
