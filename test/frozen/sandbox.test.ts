import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { updateSettings } from "../../src/merchants/index.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import {
  balance,
  expectLedgerOk,
  type Funded,
  fundedMerchant,
  hookStatuses,
} from "../withdrawals/support.js";

// Frozen funds in the sandbox (README.md#frozen-funds): the simulator's token
// has the test frozen addresses on its blacklist; a local screening fake answers as each test sets.
const TRC = "USDT-TRC20";
const ERC = "USDT-ERC20";
const TRON_FROZEN = "T9yD14Nj9j7xAB4dbGeiX9h8upGUqmaajC";
const EVM_FROZEN = "0x000000000000000000000000000000000000B10C";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const TRON_SANCTIONED = "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy";

/** The screening fake: denies the addresses in `deny` (per direction), allows the rest. */
const deny = new Map<string, string>();
const asked: { address: string; network: string; direction: string }[] = [];
let screening: Server;
/** The fake answers 500 (the error policy decides: closed, the default). */
let failing = false;

let svc: TestService;
let receiver: Receiver;
let m: Funded;

beforeAll(async () => {
  screening = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const q = JSON.parse(body) as { address: string; network: string; direction: string };
      asked.push(q);
      if (failing) {
        res.statusCode = 500;
        res.end("provider internals: db-7 down");
        return;
      }
      const reason = deny.get(`${q.direction}:${q.address}`);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(reason ? { decision: "deny", reason } : { decision: "allow" }));
    });
  });
  await new Promise<void>((r) => screening.listen(0, "127.0.0.1", r));
  const port = (screening.address() as AddressInfo).port;
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      SCREENING_URL: `http://127.0.0.1:${port}/screen`,
      SCREENING_CACHE_SECONDS: "0",
      CURRENCY_TYPES: "USDT-TRC20,USDT-ERC20,USDC-ERC20",
    },
    ...(process.env.DEBUG_LOG ? { logDestination: process.stderr } : {}),
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 500, [ERC]: 500 });
});
afterEach(async () => {
  deny.clear();
  await expectLedgerOk(svc);
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await new Promise((r) => screening?.close(r));
});

const withdraw = (json: Record<string, unknown>) =>
  call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers: m.api,
    json: { currencyType: TRC, walletAddress: TRON_TO, amount: 10, ...json },
  });

async function transaction(id: string) {
  const r = await call(svc.urls.sandbox, `/api/v1/public/transactions/${id}`, { headers: m.api });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

/** A session paid by the simulator as `from`; the deposit that payment made (found by its webhook). */
async function paidFrom(from: string, amount = 20, currencyType = TRC) {
  const s = await call(svc.urls.sandbox, "/checkout/session", {
    headers: m.api,
    json: { amount, currencyType },
  });
  expect(s.status, s.text).toBe(201);
  const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
    headers: m.api,
    json: { from },
  });
  expect(pay.status, pay.text).toBe(202);
  const hook = await waitFor(() =>
    receiver.received
      .map((r) => JSON.parse(r.raw.toString("utf8")))
      .find((b) => b.data?.checkoutSessionId === s.body.data.id && b.data?.transactionId !== s.body.data.id),
  );
  return { sessionId: s.body.data.id as string, depositId: hook.data.transactionId as string, hook };
}

describe("destinations the token froze or screening refuses (422 DESTINATION_BLOCKED, nothing held)", () => {
  it("a withdrawal to the TRON and the EVM test frozen address", async () => {
    const before = await balance(svc, m.api, TRC);
    const r = await withdraw({ walletAddress: TRON_FROZEN });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error).toMatchObject({
      code: "DESTINATION_BLOCKED",
      details: { reason: "token_blacklist" },
    });
    expect(await balance(svc, m.api, TRC)).toEqual(before);
    const e = await withdraw({ currencyType: ERC, walletAddress: EVM_FROZEN });
    expect(e.status, e.text).toBe(422);
    expect(e.body.error.details.reason).toBe("token_blacklist");
    // The lower-case spelling is the same address.
    const lower = await withdraw({ currencyType: ERC, walletAddress: EVM_FROZEN.toLowerCase() });
    expect(lower.body.error?.code).toBe("DESTINATION_BLOCKED");
  });

  it("a destination the screening provider refuses, with its reason", async () => {
    deny.set(`outgoing:${TRON_SANCTIONED}`, "sanctions list");
    const before = await balance(svc, m.api, TRC);
    const r = await withdraw({ walletAddress: TRON_SANCTIONED });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error).toMatchObject({
      code: "DESTINATION_BLOCKED",
      details: { reason: "screening", message: "sanctions list" },
    });
    expect(asked).toContainEqual({ address: TRON_SANCTIONED, network: TRC, direction: "outgoing" });
    expect(await balance(svc, m.api, TRC)).toEqual(before);
  });

  it("a provider that fails: refused by the policy, the cause kept from the API caller (outside review)", async () => {
    failing = true;
    try {
      const r = await withdraw({ walletAddress: TRON_TO });
      expect(r.status, r.text).toBe(422);
      expect(r.body.error.details).toEqual({ reason: "screening", message: "screening unavailable" });
      expect(r.text).not.toContain("db-7");
    } finally {
      failing = false;
    }
  });

  it("a replay of a created withdrawal gets its stored answer, whatever the destination's state now", async () => {
    await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: false }, new Date());
    try {
      const key = `frozen-replay-${Date.now()}`;
      const body = { currencyType: TRC, walletAddress: TRON_SANCTIONED, amount: 3 };
      const first = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: { ...m.api, "idempotency-key": key },
        json: body,
      });
      expect(first.status, first.text).toBe(201);
      deny.set(`outgoing:${TRON_SANCTIONED}`, "listed since");
      const replay = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: { ...m.api, "idempotency-key": key },
        json: body,
      });
      expect(replay.status, replay.text).toBe(201);
      expect(replay.body.data.id).toBe(first.body.data.id);
      const rej = await call(
        svc.urls.sandbox,
        `/api/v1/public/withdrawal-requests/${first.body.data.id}/reject`,
        {
          headers: m.api,
          json: {},
        },
      );
      expect(rej.status, rej.text).toBe(200);
    } finally {
      await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: true }, new Date());
    }
  });

  it("a bad amount is still a 400 naming it, not a 422", async () => {
    const r = await withdraw({ walletAddress: TRON_FROZEN, amount: 0.5 });
    expect(r.status, r.text).toBe(400);
  });

  it("a payout to a frozen address: 422 before the OTP is spent", async () => {
    const sent = await call(svc.urls.sandbox, "/api/v1/auth/otp", {
      headers: m.bearer,
      json: { purpose: "payout" },
    });
    expect(sent.status, sent.text).toBe(200);
    const mail = await call(svc.urls.sandbox, "/api/v1/dashboard/dev/mail?limit=1", { headers: m.bearer });
    const otp = /\b(\d{6})\b/.exec(mail.body.data[0].text)?.[1];
    const r = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 5, currencyType: TRC, walletAddress: TRON_FROZEN, otp },
    });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.code).toBe("DESTINATION_BLOCKED");
    // The code was not spent: the same OTP pays an allowed address.
    const ok = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 5, currencyType: TRC, walletAddress: TRON_TO, otp },
    });
    expect(ok.status, ok.text).toBe(201);
    await waitFor(async () => (await transaction(ok.body.data.id)).status === "completed", 15_000);
  });

  it("refused between the request and the signing: failed, hold released, the reason recorded", async () => {
    await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: false }, new Date());
    try {
      const before = await balance(svc, m.api, TRC);
      const r = await withdraw({ walletAddress: TRON_SANCTIONED, amount: 12 });
      expect(r.status, r.text).toBe(201);
      expect(r.body.data.status).toBe("pending");
      deny.set(`outgoing:${TRON_SANCTIONED}`, "listed since");
      const a = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}/approve`, {
        headers: m.api,
        json: {},
      });
      expect(a.status, a.text).toBe(200);
      const failed = await waitFor(async () => {
        const t = await transaction(r.body.data.id);
        return t.status === "failed" ? t : null;
      }, 15_000);
      expect(failed.blockchainTxHash).toBeNull();
      const w = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}`, {
        headers: m.api,
      });
      expect(w.body.data.rejectionReason).toBe("destination_blocked: screening: listed since");
      expect(await balance(svc, m.api, TRC)).toEqual(before);
      await waitFor(() => hookStatuses(receiver, r.body.data.id).includes("failed"));
    } finally {
      await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: true }, new Date());
    }
  });
});

describe("a screening provider that does not answer just before signing", () => {
  it("the approved withdrawal waits queued (not failed) and is paid once the provider answers (outside review)", async () => {
    await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: false }, new Date());
    try {
      const r = await withdraw({ walletAddress: TRON_TO, amount: 11 });
      expect(r.status, r.text).toBe(201);
      failing = true;
      const a = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}/approve`, {
        headers: m.api,
        json: {},
      });
      expect(a.status, a.text).toBe(200);
      const waiting = await waitFor(async () => {
        const row = await svc.database.db
          .selectFrom("outgoing_transfers")
          .select(["status", "last_error"])
          .where("intent_id", "=", r.body.data.id)
          .executeTakeFirst();
        return row?.last_error ? row : null;
      }, 15_000);
      expect(waiting).toEqual({
        status: "queued",
        last_error: "screening provider unavailable: the transfer waits for its answer",
      });
      expect((await transaction(r.body.data.id)).status).toBe("processing");
      failing = false;
      const done = await waitFor(async () => {
        const t = await transaction(r.body.data.id);
        return ["completed", "failed"].includes(t.status) ? t : null;
      }, 30_000);
      expect(done.status).toBe("completed");
    } finally {
      failing = false;
      await updateSettings(svc.database.db, m.merchantId, "sandbox", { autoWithdraw: true }, new Date());
    }
  });
});

describe("deposits from a frozen or refused sender are held", () => {
  it("held: webhook `held`, counted in held, not available; the session stays pending", async () => {
    const before = await balance(svc, m.api, TRC);
    const { sessionId, depositId, hook } = await paidFrom(TRON_FROZEN, 20);
    expect(hook.data).toMatchObject({ status: "held", holdReason: "token_blacklist", amount: 20 });
    const t = await transaction(depositId);
    expect(t).toMatchObject({
      type: "deposit",
      status: "held",
      holdReason: "token_blacklist",
      checkoutSessionId: sessionId,
    });
    const after = await balance(svc, m.api, TRC);
    expect(after.available).toBe(before.available);
    expect(after.held).toBe(before.held + 20);
    const s = await call(svc.urls.sandbox, `/checkout/session/${sessionId}`, { headers: m.api });
    expect(s.body.data.status).toBe("pending");
    // Not a payment of the session: nothing "detected" on it (the hosted page says the same).
    expect(s.body.data.detectedAmount).toBe(0);
  });

  it("a sender the screening provider refuses: held with the provider's reason", async () => {
    deny.set(`incoming:${TRON_SANCTIONED}`, "mixer");
    const { depositId } = await paidFrom(TRON_SANCTIONED, 7);
    expect(await transaction(depositId)).toMatchObject({ status: "held", holdReason: "screening: mixer" });
  });

  it("released by the owner: credited once (netAmount to available), 409 on a second decision; still no payment of its session", async () => {
    const { depositId, sessionId } = await paidFrom(TRON_FROZEN, 30);
    const before = await balance(svc, m.api, TRC);
    const r = await call(svc.urls.sandbox, `/api/v1/dashboard/transactions/${depositId}/release`, {
      headers: m.bearer,
      json: {},
    });
    expect(r.status, r.text).toBe(202);
    expect(r.body.data.status).toBe("held");
    const again = await call(svc.urls.sandbox, `/api/v1/dashboard/transactions/${depositId}/return`, {
      headers: m.bearer,
      json: {},
    });
    expect(again.status, again.text).toBe(409);
    const done = await waitFor(async () => {
      const t = await transaction(depositId);
      return t.status === "confirmed" ? t : null;
    });
    const after = await balance(svc, m.api, TRC);
    expect(after.available).toBeCloseTo(before.available + done.netAmount, 6);
    expect(after.held).toBeCloseTo(before.held - 30, 6);
    await waitFor(() => hookStatuses(receiver, depositId).includes("confirmed"));
    expect(hookStatuses(receiver, depositId)).toEqual(["held", "confirmed"]);
    const late = await call(svc.urls.sandbox, `/api/v1/dashboard/transactions/${depositId}/release`, {
      headers: m.bearer,
      json: {},
    });
    expect(late.status, late.text).toBe(409);
    expect(late.body.error.details.status).toBe("confirmed");
    // Released, it is the merchant's money but not the order's payment (outside review: the page
    // told the customer nothing was left to pay): the session detected nothing, its page neither.
    const session = await call(svc.urls.sandbox, `/checkout/session/${sessionId}`, { headers: m.api });
    expect(session.body.data).toMatchObject({ status: "pending", detectedAmount: 0, actualBalance: 0 });
    const page = await call(svc.urls.sandbox, `/pay/${sessionId}`);
    expect(page.status, page.text).toBe(200);
    expect(page.text).toContain('data-detected="0"');
    expect(page.text).toContain('data-remaining="30"');
  });

  it("returned: one transfer of what arrived back to the sender; the books move when it confirms", async () => {
    const { depositId } = await paidFrom(TRON_FROZEN, 25);
    const before = await balance(svc, m.api, TRC);
    const r = await call(svc.urls.sandbox, `/api/v1/dashboard/transactions/${depositId}/return`, {
      headers: m.bearer,
      json: {},
    });
    expect(r.status, r.text).toBe(202);
    await waitFor(async () => (await transaction(depositId)).status === "returned");
    await waitFor(() => hookStatuses(receiver, depositId).includes("returned"));
    // The simulator's chain: one transfer from the deposit address to the frozen sender, of 25.
    const t = await transaction(depositId);
    await waitFor(async () => {
      const rows = await svc.database.db
        .selectFrom("outgoing_transfers")
        .select(["status", "to_address", "amount", "kind"])
        .where("kind", "=", "return")
        .execute();
      const mine = rows.filter((x) => x.to_address === TRON_FROZEN);
      return mine.length === 1 && mine[0]?.status === "confirmed";
    }, 15_000);
    const sim = await svc.database.db
      .selectFrom("sim_transactions")
      .select(["from_address", "to_address", "amount", "status"])
      .where("from_address", "=", t.walletAddress)
      .where("to_address", "=", TRON_FROZEN)
      .execute();
    expect(sim).toEqual([
      { from_address: t.walletAddress, to_address: TRON_FROZEN, amount: "25000000", status: "success" },
    ]);
    await waitFor(async () => (await balance(svc, m.api, TRC)).held === before.held - 25);
    expect((await balance(svc, m.api, TRC)).available).toBe(before.available);
  });

  it("USDC: a return to the frozen test address fails as Circle's contract refuses it; the deposit is held again (outside review)", async () => {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 12, currencyType: "USDC-ERC20" },
    });
    expect(s.status, s.text).toBe(201);
    const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: m.api,
      json: { from: EVM_FROZEN },
    });
    expect(pay.status, pay.text).toBe(202);
    const hook = await waitFor(() =>
      receiver.received
        .map((r) => JSON.parse(r.raw.toString("utf8")))
        .find(
          (b) => b.data?.checkoutSessionId === s.body.data.id && b.data?.transactionId !== s.body.data.id,
        ),
    );
    const depositId = hook.data.transactionId as string;
    expect(await transaction(depositId)).toMatchObject({ status: "held", holdReason: "token_blacklist" });
    const before = await balance(svc, m.api, "USDC-ERC20");
    const r = await call(svc.urls.sandbox, `/api/v1/dashboard/transactions/${depositId}/return`, {
      headers: m.bearer,
      json: {},
    });
    expect(r.status, r.text).toBe(202);
    await waitFor(() => hookStatuses(receiver, depositId).filter((x) => x === "held").length === 2, 15_000);
    expect(hookStatuses(receiver, depositId)).toEqual(["held", "returned", "held"]);
    expect((await transaction(depositId)).status).toBe("held");
    expect(await balance(svc, m.api, "USDC-ERC20")).toEqual(before);
    const sim = await svc.database.db
      .selectFrom("sim_transactions")
      .select(["status", "failure_reason"])
      .where("from_address", "=", hook.data.walletAddress)
      .execute();
    expect(sim).toEqual([{ status: "failed", failure_reason: "Blacklistable: account is blacklisted" }]);
  });

  it("a `from` that is one of the gateway's deposit addresses is a 400", async () => {
    const w = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: m.api,
      json: { currencyType: TRC },
    });
    expect(w.status, w.text).toBe(201);
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 3, currencyType: TRC },
    });
    const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: m.api,
      json: { from: w.body.data.address },
    });
    expect(pay.status, pay.text).toBe(400);
    expect(pay.body.error.details.fields[0].field).toBe("from");
    // The test failure address cannot send (its transfers always fail): a 400, not a 202 for nothing.
    const failing = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: m.api,
      json: { from: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb" },
    });
    expect(failing.status, failing.text).toBe(400);
  });

  it("a provider's reason with control characters is kept clean; the deposit is held, not lost", async () => {
    deny.set(`incoming:${TRON_SANCTIONED}`, "bad\u0000actor");
    const { depositId } = await paidFrom(TRON_SANCTIONED, 6);
    expect(await transaction(depositId)).toMatchObject({
      status: "held",
      holdReason: "screening: bad actor",
    });
  });

  it("only the owner and admins decide; a deposit that is not held is a 409; another merchant's is a 404", async () => {
    const ok = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 4, currencyType: TRC },
    });
    const r = await call(svc.urls.sandbox, `/api/v1/dashboard/transactions/${ok.body.data.id}/release`, {
      headers: m.bearer,
      json: {},
    });
    expect(r.status, r.text).toBe(409);
    const none = await call(svc.urls.sandbox, "/api/v1/dashboard/transactions/tx_doesnotexist/release", {
      headers: m.bearer,
      json: {},
    });
    expect(none.status, none.text).toBe(404);
    const other = await fundedMerchant(svc, receiver, {});
    const { depositId } = await paidFrom(TRON_FROZEN, 2);
    const theirs = await call(svc.urls.sandbox, `/api/v1/dashboard/transactions/${depositId}/release`, {
      headers: other.bearer,
      json: {},
    });
    expect(theirs.status, theirs.text).toBe(404);
    expect((await transaction(depositId)).status).toBe("held");
  });
});

describe("every screening decision in the audit log (actor system `screening`, action screening.decision)", () => {
  it("destinations at the request and before signing, deposit senders; each in its own merchant's log, and nowhere else", async () => {
    const a = await fundedMerchant(svc, receiver, { [TRC]: 100 });
    deny.set(`outgoing:${TRON_SANCTIONED}`, "sanctions list");
    const refused = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: a.api,
      json: { currencyType: TRC, walletAddress: TRON_SANCTIONED, amount: 5 },
    });
    expect(refused.status, refused.text).toBe(422);
    const paid = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: a.api,
      json: { currencyType: TRC, walletAddress: TRON_TO, amount: 5 },
    });
    expect(paid.status, paid.text).toBe(201);
    const withdrawalId = paid.body.data.id as string;
    await waitFor(async () => {
      const t = await call(svc.urls.sandbox, `/api/v1/public/transactions/${withdrawalId}`, {
        headers: a.api,
      });
      return t.body.data.status === "completed";
    }, 15_000);
    deny.set(`incoming:${TRON_SANCTIONED}`, "mixer");
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: a.api,
      json: { amount: 3, currencyType: TRC },
    });
    const pay = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
      headers: a.api,
      json: { from: TRON_SANCTIONED },
    });
    expect(pay.status, pay.text).toBe(202);
    const depositAddress = s.body.data.walletAddress as string;

    const decisions = async (who: Record<string, string>) => {
      const r = await call(
        svc.urls.sandbox,
        "/api/v1/dashboard/audit-log?action=screening.decision&limit=100",
        {
          headers: who,
        },
      );
      expect(r.status, r.text).toBe(200);
      return r.body.data as {
        actor: { type: string; id: string };
        environment: string;
        target: { type: string; id: string } | null;
        details: Record<string, unknown>;
      }[];
    };
    const log = await waitFor(async () => {
      const d = await decisions(a.bearer);
      return d.some((x) => x.details.decision === "deny" && x.details.direction === "incoming") ? d : null;
    }, 15_000);
    for (const x of log) {
      expect(x.actor).toEqual({ type: "system", id: "screening", email: null, role: null });
      expect(x.environment).toBe("sandbox");
      expect(x.details.source).toBe("provider");
    }
    const pick = (direction: string, decision: string, target: string | null) =>
      log.filter(
        (x) =>
          x.details.direction === direction &&
          x.details.decision === decision &&
          (x.target?.type ?? null) === target,
      );
    // The refused destination, at the request (nothing was created: no target).
    expect(pick("outgoing", "deny", null).map((x) => x.details)).toEqual([
      expect.objectContaining({ address: TRON_SANCTIONED, network: TRC, reason: "sanctions list" }),
    ]);
    // The paid one: at the request, and again just before it was signed (its transaction).
    expect(pick("outgoing", "allow", null).map((x) => x.details.address)).toEqual([TRON_TO]);
    expect(pick("outgoing", "allow", "transaction").map((x) => [x.target?.id, x.details.address])).toEqual([
      [withdrawalId, TRON_TO],
    ]);
    // Deposit senders: the funding payment allowed, the sanctioned one refused (its address, its hash).
    expect(pick("incoming", "allow", "deposit_address").length).toBe(1);
    const held = pick("incoming", "deny", "deposit_address");
    expect(held.map((x) => [x.target?.id, x.details.address, x.details.reason])).toEqual([
      [depositAddress, TRON_SANCTIONED, "mixer"],
    ]);
    expect(held[0]?.details.txHash).toEqual(expect.any(String));
    // Another merchant's log has none of them.
    const theirs = await decisions(m.bearer);
    expect(theirs.some((x) => x.target?.id === withdrawalId || x.target?.id === depositAddress)).toBe(false);
  });
});
