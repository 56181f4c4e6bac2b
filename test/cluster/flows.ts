import { randomBytes } from "node:crypto";
import {
  type Currency,
  type Decision,
  type DepositFlow,
  FEES,
  type Flow,
  fee,
  formatUnits,
  toUnits,
  type WithdrawalFlow,
} from "./book.js";
import { type Answer, type Apis, sleep } from "./load.js";

/** One merchant's sandbox key pair, as the load uses it. */
export interface MerchantKeys {
  id: string;
  api: { apikey: string; "x-api-secret": string };
}

/** Ordinary destinations and the networks' test failure addresses (docs/merchants/sandbox.md#test-failure-addresses). */
export const DESTINATIONS: Record<Currency, { ordinary: string; failing: string }> = {
  "USDT-TRC20": {
    ordinary: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW",
    failing: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
  },
  "USDT-ERC20": {
    ordinary: "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
    failing: "0x000000000000000000000000000000000000dEaD",
  },
};

/** Merchants' auto-approve threshold (USDT): auto withdrawals are at most this, manual ones above. */
export const AUTO_APPROVE_THRESHOLD = 50;

/** What the load collects besides the flows: answers that must not happen, ids per Idempotency-Key. */
export interface LoadContext {
  apis: Apis;
  merchants: MerchantKeys[];
  flows: Flow[];
  /** Every id a 201 answered per Idempotency-Key (one id per key, whichever api answered). */
  idsByKey: Map<string, Set<string>>;
  /** Replays of a finished key: must answer the stored response with Idempotent-Replayed. */
  replays: { key: string; ok: boolean; detail: string }[];
  /** Answers no correct service gives to these inputs (e.g. a 4xx to a valid request). */
  unexpected: string[];
}

const rand = (lo: number, hi: number) => lo + Math.random() * (hi - lo);

/** A random amount in [lo, hi) USDT with 0 to 6 decimals. */
function amountBetween(lo: number, hi: number): bigint {
  const units = BigInt(Math.floor(rand(lo, hi) * 1_000_000));
  const decimals = Math.floor(Math.random() * 7);
  const step = 10n ** BigInt(6 - decimals);
  return (units / step) * step || step;
}

const asJsonNumber = (units: bigint) => Number(formatUnits(units));

function note(ctx: LoadContext, key: string, answer: Answer | undefined) {
  const id = answer?.status === 201 ? (answer.body?.data?.id as string | undefined) : undefined;
  if (!id) return;
  const ids = ctx.idsByKey.get(key) ?? new Set<string>();
  ids.add(id);
  ctx.idsByKey.set(key, ids);
}

/**
 * A creating POST with an Idempotency-Key, retried to a definite answer. `both`: sent to the two
 * apis at once (the same key racing itself); each answer must carry the same id.
 */
async function create(
  ctx: LoadContext,
  label: string,
  path: string,
  m: MerchantKeys,
  key: string,
  json: Record<string, unknown>,
  both: boolean,
): Promise<Answer | undefined> {
  const init = { headers: { ...m.api, "idempotency-key": key }, json };
  const sends = both
    ? [0, 1].map((prefer) => ctx.apis.retrying(label, path, init, { prefer }))
    : [ctx.apis.retrying(label, path, init)];
  const answers = (await Promise.all(sends)).map((r) => r.answer);
  for (const a of answers) note(ctx, key, a);
  const created = answers.find((a) => a?.status === 201);
  // Every send ends in a 201, the original or its replay (the loser of a same-key race retries
  // its 409 IDEMPOTENCY_CONFLICT until the winner's answer is stored).
  if (answers.some((a) => a?.status !== 201)) {
    ctx.unexpected.push(
      `${label} ${key}: ${answers.map((a) => (a ? `${a.status} ${JSON.stringify(a.body?.error ?? a.body)}` : "no answer")).join("; ")}`,
    );
  }
  if (both && created) {
    // Later, the same key once more: the stored response, marked as replayed.
    await sleep(rand(100, 600));
    const { answer } = await ctx.apis.retrying(`${label} replay`, path, init);
    note(ctx, key, answer);
    const ok = answer?.status === 201 && answer.headers.get("idempotent-replayed") === "true";
    ctx.replays.push({
      key,
      ok,
      detail: `${answer?.status ?? "no answer"} replayed=${answer?.headers.get("idempotent-replayed")}`,
    });
  }
  return created;
}

/** A checkout session, paid in full through the sandbox pay endpoint. */
export async function depositFlow(
  ctx: LoadContext,
  merchant: number,
  currency: Currency,
  options: {
    amount?: bigint;
    both?: boolean;
    /** Pays the session's address on a real chain instead of the sandbox pay endpoint (simulator). */
    pay?: (address: string, amount: bigint) => Promise<void>;
    /** Created and never paid (a lying provider may forge a payment to it: it must stay pending). */
    unpaid?: boolean;
  } = {},
): Promise<DepositFlow> {
  const m = ctx.merchants[merchant] as MerchantKeys;
  const key = `dep-${randomBytes(8).toString("hex")}`;
  const amount = options.amount ?? amountBetween(10, 500);
  const flow: DepositFlow = {
    kind: "deposit",
    merchant,
    currency,
    key,
    amount,
    sessionId: undefined,
    paid: "no",
  };
  ctx.flows.push(flow);
  const created = await create(
    ctx,
    "checkout create",
    "/checkout/session",
    m,
    key,
    { amount: asJsonNumber(amount), currencyType: currency, orderId: key },
    options.both ?? false,
  );
  if (!created) return flow;
  flow.sessionId = created.body.data.id as string;
  if (toUnits(created.body.data.amount) !== amount)
    ctx.unexpected.push(
      `session ${flow.sessionId}: amount ${created.body.data.amount}, asked ${formatUnits(amount)}`,
    );
  flow.address = created.body.data.walletAddress as string;
  if (options.unpaid) return flow;
  if (options.pay) {
    await options.pay(flow.address, amount);
    flow.paid = "yes";
    return flow;
  }
  // Not repeated: a payment is not idempotent, so a lost answer leaves it "unknown" and the session
  // itself shows at the end whether it was paid.
  const pay = await ctx.apis.once(
    ctx.apis.pick(),
    "sandbox pay",
    `/api/v1/sandbox/checkout/${flow.sessionId}/pay`,
    {
      headers: m.api,
      json: {},
    },
  );
  if (pay?.status === 202) flow.paid = "yes";
  else {
    flow.paid = "unknown";
    if (pay && pay.status < 500)
      ctx.unexpected.push(`pay ${flow.sessionId}: ${pay.status} ${JSON.stringify(pay.body)}`);
  }
  return flow;
}

export interface WithdrawalOptions {
  manual: boolean;
  failing: boolean;
  plan?: Decision | "race";
  both?: boolean;
  /** The destination (default: the network's ordinary or failure address). */
  to?: string;
}

/** A withdrawal request; a manual one then approved, rejected, or both at once from both apis. */
export async function withdrawalFlow(
  ctx: LoadContext,
  merchant: number,
  currency: Currency,
  o: WithdrawalOptions,
): Promise<WithdrawalFlow> {
  const m = ctx.merchants[merchant] as MerchantKeys;
  const key = `wd-${randomBytes(8).toString("hex")}`;
  const amount = o.manual
    ? amountBetween(AUTO_APPROVE_THRESHOLD + 1, 300)
    : amountBetween(5, AUTO_APPROVE_THRESHOLD);
  const flow: WithdrawalFlow = {
    kind: "withdrawal",
    merchant,
    currency,
    key,
    amount,
    failing: o.failing,
    manual: o.manual,
    id: undefined,
    fee: undefined,
    plan: o.manual ? (o.plan ?? "approve") : undefined,
    attempts: [],
    to: o.to,
  };
  ctx.flows.push(flow);
  const created = await create(
    ctx,
    "withdrawal create",
    "/api/v1/public/withdrawal-requests",
    m,
    key,
    {
      amount: asJsonNumber(amount),
      currencyType: currency,
      walletAddress: o.to ?? (o.failing ? DESTINATIONS[currency].failing : DESTINATIONS[currency].ordinary),
      reference: key,
    },
    o.both ?? false,
  );
  if (!created) return flow;
  const w = created.body.data;
  flow.id = w.id as string;
  flow.fee = toUnits(w.fee);
  const wantFee = fee(FEES[currency].withdrawal, amount);
  if (flow.fee !== wantFee || toUnits(w.netAmount) !== amount - wantFee)
    ctx.unexpected.push(
      `withdrawal ${flow.id}: fee ${w.fee} net ${w.netAmount}, schedule says ${formatUnits(wantFee)}`,
    );
  const wantStatus = o.manual ? "pending" : "processing";
  if (w.status !== wantStatus)
    ctx.unexpected.push(`withdrawal ${flow.id}: created ${w.status}, expected ${wantStatus}`);
  if (!o.manual) return flow;

  await sleep(rand(0, 1_500));
  const path = (action: Decision) => `/api/v1/public/withdrawal-requests/${flow.id}/${action}`;
  const attempt = async (action: Decision, slot: number) => {
    const json = action === "reject" ? { reason: "cluster test" } : {};
    const a = await ctx.apis.once(slot, action, path(action), { headers: m.api, json });
    const outcome = a ? a.status : "error";
    flow.attempts.push({ action, outcome });
    if (
      a &&
      a.status < 500 &&
      a.status !== 200 &&
      !(a.status === 409 && a.body?.error?.code === "INVALID_STATE")
    )
      ctx.unexpected.push(`${action} ${flow.id}: ${a.status} ${JSON.stringify(a.body)}`);
    return outcome;
  };
  const transient = (outcome: number | "error") => outcome === "error" || outcome >= 500;
  // First round: the planned action, or the race — approve and reject each sent to both apis at once.
  const first: [Decision, number][] =
    flow.plan === "race"
      ? [
          ["approve", 0],
          ["reject", 1],
          ["approve", 1],
          ["reject", 0],
        ]
      : [[flow.plan as Decision, ctx.apis.pick()]];
  const outcomes = await Promise.all(first.map(([action, slot]) => attempt(action, slot)));
  // A lost answer or a 5xx is repeated (elsewhere) until a definite one: 200, or 409 when the
  // request was decided already (maybe by the lost attempt itself).
  const pendingRetries = first
    .filter((_, i) => transient(outcomes[i] as number | "error"))
    .map(([action]) => action);
  if (outcomes.includes(200)) return flow;
  const until = Date.now() + 45_000;
  for (const action of [...new Set(pendingRetries)]) {
    let slot = ctx.apis.pick();
    for (;;) {
      await sleep(rand(150, 500));
      const outcome = await attempt(action, slot);
      if (!transient(outcome) || Date.now() > until) break;
      slot = ctx.apis.pick(ctx.apis.other(slot));
    }
    if (flow.attempts.some((a) => a.outcome === 200)) break;
  }
  return flow;
}
