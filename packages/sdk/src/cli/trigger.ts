import { Stablegate } from "../client.js";
import { StablegateError } from "../errors.js";
import type { CHAIN_FAMILYS } from "../generated/enums.js";
import { serverDelaySeconds } from "../retry.js";
import type { RequestOptions } from "../transport.js";
import type {
  BalanceEntry,
  CheckoutSession,
  CheckoutSessionCreateParams,
  Wallet,
  Withdrawal,
} from "../types.js";
import { describeApiError } from "./describe.js";
import type { Connection } from "./options.js";

export const TRIGGER_EVENTS = [
  "deposit.confirmed",
  "deposit.failed",
  "withdrawal.completed",
  "withdrawal.failed",
  "withdrawal.pending",
  "withdrawal.rejected",
] as const;
export type TriggerEvent = (typeof TRIGGER_EVENTS)[number];

/** A currency type (`<TOKEN>-<NETWORK>`), as the API's operations type it (the generated enum). */
export type Currency = CheckoutSessionCreateParams["currencyType"];
/** How a network's addresses look: TRON (T…) or EVM (0x…, the same on every EVM network). */
export type ChainFamily = (typeof CHAIN_FAMILYS)[number];

/** The TRON network's name, the second half of its currency types (`USDT-TRC20`); every other network is an EVM one. */
const TRON_NETWORK = "TRC20";

/** The address family of a currency type, from its network half. */
export function chainFamily(currency: Currency): ChainFamily {
  return currency.slice(currency.indexOf("-") + 1) === TRON_NETWORK ? "tron" : "evm";
}

/**
 * The sandbox test addresses per chain family (docs/merchants/sandbox.md#simulated-payments):
 * every outgoing transfer succeeds except to these, which fail on-chain.
 */
export const FAILURE_ADDRESSES: Record<ChainFamily, string> = {
  tron: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
  evm: "0x000000000000000000000000000000000000dEaD",
};
/** Valid addresses that belong to nobody's deposit sessions, for withdrawals that succeed. */
export const DESTINATION_ADDRESSES: Record<ChainFamily, string> = {
  tron: "TJCx4A1XzNvy32sqbmi86xcURjRi1Etver",
  evm: "0x5a5A5a5a5A5a5a5a5a5A5a5A5A5a5a5A5A5A5A5A",
};
/** The gateway's default `autoApproveThreshold` (docs/api-reference.md#createwithdrawalrequest): a withdrawal above it waits. */
export const DEFAULT_AUTO_APPROVE_THRESHOLD = 1_000;
/** The gateway's default shortest session (`CHECKOUT_MIN_EXPIRY_SECONDS` = 300). */
export const DEFAULT_FAIL_EXPIRY_MINUTES = 5;

export interface TriggerOptions extends Connection {
  event: TriggerEvent;
  /** Default: the first currency type the gateway enables (`GET /api/v1/public/currencies`). */
  currency?: Currency | undefined;
  /** The amount of the deposit or withdrawal (defaults per event). */
  amount?: number | undefined;
  /** `deposit.failed`: the session's lifetime (default 5, the gateway's default minimum). */
  expiresInMinutes?: number | undefined;
  /** How long to wait for the final status (default: 120 s after any expiry). */
  waitMs?: number | undefined;
  signal: AbortSignal;
  onLine(line: string): void;
  fetch?: typeof fetch;
}

const WITHDRAWALS = "/api/v1/public/withdrawal-requests";

/** Thrown when the sandbox did something other than the event asks for (exit 1, with the reason). */
export class TriggerError extends Error {
  override name = "TriggerError";
}

/**
 * `stablegate-dev trigger <event>`: creates the real sandbox objects that cause `event`, through the
 * public API (nothing is faked: the simulator pays or sends, the gateway's own flow writes the
 * webhook), waits for the outcome and says what it did. Sandbox only. Returns the transaction id.
 */
export async function trigger(o: TriggerOptions): Promise<string> {
  if (o.environment !== "sandbox" || o.apiKey.startsWith("ak_live_")) {
    throw new TriggerError("trigger runs only against the sandbox (a sandbox key, ak_test_…)");
  }
  const sg = new Stablegate({
    apiKey: o.apiKey,
    apiSecret: o.apiSecret,
    environment: o.environment,
    baseUrl: o.baseUrl,
    fetch: o.fetch,
    // A rate-limited call is retried after the gateway's wait: say so, rather than seem stuck.
    onResponse: (info) => {
      if (info.status !== 429) return;
      const seconds = serverDelaySeconds(info.headers);
      o.onLine(
        `rate limited by the gateway (HTTP 429 on ${info.method} ${new URL(info.url).pathname}): ` +
          (seconds === undefined
            ? "the SDK retries shortly"
            : `the SDK waits ${Math.ceil(seconds)} s (Retry-After) before a retry`),
      );
    },
  });
  // Ctrl-C also ends a request or a retry's wait; what each call retries is the SDK's decision
  // (creating POSTs carry an Idempotency-Key, sandbox pay/approve/reject are repeated on 429 only).
  const opts: RequestOptions = { signal: o.signal };
  const say = o.onLine;
  const currency = o.currency ?? (await firstEnabled());
  const [kind] = o.event.split(".") as ["deposit" | "withdrawal"];
  if (kind === "deposit") return o.event === "deposit.confirmed" ? depositConfirmed() : depositFailed();
  return withdrawal();

  async function depositConfirmed(): Promise<string> {
    const amount = o.amount ?? 25;
    const s = await call("POST /checkout/session", () =>
      sg.checkoutSessions.create(
        {
          amount,
          currencyType: currency,
          orderId: `stablegate-dev-${Date.now()}`,
          metadata: { createdBy: "stablegate-dev trigger deposit.confirmed" },
        },
        opts,
      ),
    );
    say(`checkout session ${s.id} created for ${amount} ${currency}`);
    await call(`POST /api/v1/sandbox/checkout/${s.id}/pay`, () =>
      sg.sandbox.payCheckoutSession(s.id, {}, opts),
    );
    say(`paid ${amount} ${currency} from the sandbox faucet; waiting for the confirmation`);
    await waitStatus(() => getSession(s.id), ["confirmed", "failed"], "confirmed", o.waitMs ?? 120_000);
    say(`deposit ${s.id} confirmed: deposit.confirmed sent`);
    return s.id;
  }

  async function depositFailed(): Promise<string> {
    const amount = o.amount ?? 20;
    const minutes = o.expiresInMinutes ?? DEFAULT_FAIL_EXPIRY_MINUTES;
    const s = await call("POST /checkout/session", () =>
      sg.checkoutSessions.create(
        {
          amount,
          currencyType: currency,
          expiresInMinutes: minutes,
          orderId: `stablegate-dev-${Date.now()}`,
          metadata: { createdBy: "stablegate-dev trigger deposit.failed" },
        },
        opts,
      ),
    );
    const partial = Math.floor((amount / 2) * 1e6) / 1e6;
    await call(`POST /api/v1/sandbox/checkout/${s.id}/pay`, () =>
      sg.sandbox.payCheckoutSession(s.id, { amount: partial }, opts),
    );
    const ms = Math.max(0, Date.parse(s.expiresAt) - Date.now());
    // Honest about the wait: a deposit fails only when its session expires underpaid.
    say(
      `checkout session ${s.id} for ${amount} ${currency}, paid ${partial} (a partial payment); ` +
        `deposit.failed follows when it expires at ${s.expiresAt} (in ${Math.ceil(ms / 1000)} s) — waiting`,
    );
    await waitStatus(() => getSession(s.id), ["confirmed", "failed"], "failed", ms + (o.waitMs ?? 120_000));
    say(
      `deposit ${s.id} failed (expired with ${partial} of ${amount}; the partial payment is credited): deposit.failed sent`,
    );
    return s.id;
  }

  async function withdrawal(): Promise<string> {
    const waits = o.event === "withdrawal.pending" || o.event === "withdrawal.rejected";
    const amount = o.amount ?? (waits ? DEFAULT_AUTO_APPROVE_THRESHOLD + 1 : 10);
    await ensureAvailable(amount);
    const family = chainFamily(currency);
    const walletAddress =
      o.event === "withdrawal.failed" ? FAILURE_ADDRESSES[family] : DESTINATION_ADDRESSES[family];
    let w: Withdrawal = await call(`POST ${WITHDRAWALS}`, () =>
      sg.withdrawals.create(
        { amount, currencyType: currency, walletAddress, reference: `stablegate-dev trigger ${o.event}` },
        opts,
      ),
    );
    say(
      `withdrawal ${w.id} of ${amount} ${currency} to ${walletAddress}` +
        (o.event === "withdrawal.failed" ? " (the sandbox failure address)" : "") +
        `: ${w.status}`,
    );
    const id = w.id;
    const get = () => call(`GET ${WITHDRAWALS}/${id}`, () => sg.withdrawals.get(id, opts));
    if (waits) {
      if (w.status !== "pending") {
        throw new TriggerError(
          `the withdrawal was executed at once (status ${w.status}), so no withdrawal.pending: ` +
            "give --amount above this environment's autoApproveThreshold for the currency (default 1000)",
        );
      }
      if (o.event === "withdrawal.pending") {
        say(
          `withdrawal ${w.id} waits for approval: withdrawal.pending sent (approve or reject it to finish)`,
        );
        return w.id;
      }
      w = await call(`POST ${WITHDRAWALS}/${id}/reject`, () =>
        sg.withdrawals.reject(id, { reason: "stablegate-dev trigger withdrawal.rejected" }, opts),
      );
      say(`withdrawal ${w.id} rejected: withdrawal.pending then withdrawal.rejected sent`);
      return w.id;
    }
    if (w.status === "pending") {
      // autoWithdraw off or a lower threshold: approving it is what executes it.
      say(
        `withdrawal ${w.id} waits for approval here (autoWithdraw off or amount above the threshold): approving it`,
      );
      await call(`POST ${WITHDRAWALS}/${id}/approve`, () => sg.withdrawals.approve(id, opts));
    }
    const want = o.event === "withdrawal.failed" ? "failed" : "completed";
    await waitStatus(get, ["completed", "failed", "rejected"], want, o.waitMs ?? 120_000);
    say(`withdrawal ${w.id} ${want}: withdrawal.${want} sent`);
    return w.id;
  }

  /** Tops the available balance up to `amount` from the faucet (a deposit, with its own deposit.confirmed). */
  async function ensureAvailable(amount: number): Promise<void> {
    const available = async () =>
      (await call<BalanceEntry[]>("GET /api/v1/public/balance", () => sg.balance.get(opts))).find(
        (b) => b.currencyType === currency,
      )?.available ?? 0;
    const have = await available();
    if (have >= amount) return;
    const missing = Math.ceil((amount - have) * 1e6) / 1e6;
    const wallet: Wallet = await call("POST /wallet/generate", () =>
      sg.wallets.generate({ currencyType: currency, label: "stablegate-dev trigger funding" }, opts),
    );
    // `walletAddress` is the API's name; older gateways answer only `address`.
    const named: { walletAddress?: string; address?: string } = wallet;
    const address = named.walletAddress ?? named.address;
    if (!address) throw new TriggerError("the gateway's /wallet/generate answer carries no address");
    await call(`POST /api/v1/sandbox/wallet/${address}/pay`, () =>
      sg.sandbox.payWallet(address, { amount: missing, currencyType: currency }, opts),
    );
    say(
      `funded the sandbox balance with ${missing} ${currency} (a deposit to ${address}: deposit.confirmed sent)`,
    );
    const deadline = Date.now() + (o.waitMs ?? 120_000);
    while ((await available()) < amount) {
      if (Date.now() > deadline) throw new TriggerError("the funding deposit was not credited in time");
      await pause(250);
    }
  }

  async function firstEnabled(): Promise<Currency> {
    const [first] = await call("GET /api/v1/public/currencies", () => sg.currencies.list(opts));
    if (!first) throw new TriggerError("the gateway enables no currency type in the sandbox");
    return first.currencyType;
  }

  function getSession(id: string): Promise<CheckoutSession> {
    return call(`GET /checkout/session/${id}`, () => sg.checkoutSessions.get(id, opts));
  }

  /**
   * Runs one SDK call; its typed error becomes a TriggerError naming the call, with status, code,
   * message and refused fields (the error stays reachable as `cause`).
   */
  async function call<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (err) {
      if (o.signal.aborted) throw new TriggerError("interrupted");
      if (err instanceof StablegateError) throw new TriggerError(describeApiError(what, err), { cause: err });
      throw err;
    }
  }

  async function waitStatus<T extends { status: string }>(
    read: () => Promise<T>,
    finals: string[],
    want: string,
    timeoutMs: number,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (o.signal.aborted) throw new TriggerError("interrupted");
      const t = await read();
      if (finals.includes(t.status)) {
        if (t.status !== want) throw new TriggerError(`ended ${t.status}, not ${want}`);
        return t;
      }
      if (Date.now() > deadline)
        throw new TriggerError(`still ${t.status} after ${Math.round(timeoutMs / 1000)} s`);
      await pause(250);
    }
  }
}

function pause(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
