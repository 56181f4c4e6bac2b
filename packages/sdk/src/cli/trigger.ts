import { Api, ApiError } from "./api.js";
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

export type Currency = "USDT-TRC20" | "USDT-ERC20";

/**
 * The sandbox test addresses (CONTRACT §4.1): every outgoing transfer succeeds except to these,
 * which fail on-chain.
 */
export const FAILURE_ADDRESSES: Record<Currency, string> = {
  "USDT-TRC20": "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
  "USDT-ERC20": "0x000000000000000000000000000000000000dEaD",
};
/** Valid addresses that belong to nobody's deposit sessions, for withdrawals that succeed. */
export const DESTINATION_ADDRESSES: Record<Currency, string> = {
  "USDT-TRC20": "TJCx4A1XzNvy32sqbmi86xcURjRi1Etver",
  "USDT-ERC20": "0x5a5A5a5a5A5a5a5a5a5A5a5A5A5a5a5A5A5A5A5A",
};
/** The gateway's default `autoApproveThreshold` (CONTRACT §4.2): a withdrawal above it waits. */
export const DEFAULT_AUTO_APPROVE_THRESHOLD = 1_000;
/** The gateway's default shortest session (`CHECKOUT_MIN_EXPIRY_SECONDS` = 300). */
export const DEFAULT_FAIL_EXPIRY_MINUTES = 5;

export interface TriggerOptions extends Connection {
  event: TriggerEvent;
  currency: Currency;
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

interface Session {
  id: string;
  status: string;
  amount: number;
  expiresAt: string;
}
interface Withdrawal {
  id: string;
  status: string;
  amount: number;
  fee: number;
}
interface Balance {
  currencyType: string;
  available: number;
}

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
  const api = new Api(o, o.fetch);
  const say = o.onLine;
  const [kind] = o.event.split(".") as ["deposit" | "withdrawal"];
  if (kind === "deposit") return o.event === "deposit.confirmed" ? depositConfirmed() : depositFailed();
  return withdrawal();

  async function depositConfirmed(): Promise<string> {
    const amount = o.amount ?? 25;
    const s = await api.request<Session>("POST", "/checkout/session", {
      amount,
      currencyType: o.currency,
      orderId: `stablegate-dev-${Date.now()}`,
      metadata: { createdBy: "stablegate-dev trigger deposit.confirmed" },
    });
    say(`checkout session ${s.id} created for ${amount} ${o.currency}`);
    await api.request("POST", `/api/v1/sandbox/checkout/${s.id}/pay`, {});
    say(`paid ${amount} ${o.currency} from the sandbox faucet; waiting for the confirmation`);
    await waitStatus(
      () => api.request<Session>("GET", `/checkout/session/${s.id}`),
      ["confirmed", "failed"],
      "confirmed",
      o.waitMs ?? 120_000,
    );
    say(`deposit ${s.id} confirmed: deposit.confirmed sent`);
    return s.id;
  }

  async function depositFailed(): Promise<string> {
    const amount = o.amount ?? 20;
    const minutes = o.expiresInMinutes ?? DEFAULT_FAIL_EXPIRY_MINUTES;
    const s = await api.request<Session>("POST", "/checkout/session", {
      amount,
      currencyType: o.currency,
      expiresInMinutes: minutes,
      orderId: `stablegate-dev-${Date.now()}`,
      metadata: { createdBy: "stablegate-dev trigger deposit.failed" },
    });
    const partial = Math.floor((amount / 2) * 1e6) / 1e6;
    await api.request("POST", `/api/v1/sandbox/checkout/${s.id}/pay`, { amount: partial });
    const ms = Math.max(0, Date.parse(s.expiresAt) - Date.now());
    // Honest about the wait: a deposit fails only when its session expires underpaid.
    say(
      `checkout session ${s.id} for ${amount} ${o.currency}, paid ${partial} (a partial payment); ` +
        `deposit.failed follows when it expires at ${s.expiresAt} (in ${Math.ceil(ms / 1000)} s) — waiting`,
    );
    await waitStatus(
      () => api.request<Session>("GET", `/checkout/session/${s.id}`),
      ["confirmed", "failed"],
      "failed",
      ms + (o.waitMs ?? 120_000),
    );
    say(
      `deposit ${s.id} failed (expired with ${partial} of ${amount}; the partial payment is credited): deposit.failed sent`,
    );
    return s.id;
  }

  async function withdrawal(): Promise<string> {
    const waits = o.event === "withdrawal.pending" || o.event === "withdrawal.rejected";
    const amount = o.amount ?? (waits ? DEFAULT_AUTO_APPROVE_THRESHOLD + 1 : 10);
    await ensureAvailable(amount);
    const walletAddress =
      o.event === "withdrawal.failed" ? FAILURE_ADDRESSES[o.currency] : DESTINATION_ADDRESSES[o.currency];
    let w = await api.request<Withdrawal>("POST", "/api/v1/public/withdrawal-requests", {
      amount,
      currencyType: o.currency,
      walletAddress,
      reference: `stablegate-dev trigger ${o.event}`,
    });
    say(
      `withdrawal ${w.id} of ${amount} ${o.currency} to ${walletAddress}` +
        (o.event === "withdrawal.failed" ? " (the sandbox failure address)" : "") +
        `: ${w.status}`,
    );
    const get = () => api.request<Withdrawal>("GET", `/api/v1/public/withdrawal-requests/${w.id}`);
    if (waits) {
      if (w.status !== "pending") {
        throw new TriggerError(
          `the withdrawal was executed at once (status ${w.status}), so no withdrawal.pending: ` +
            "give --amount above this environment's autoApproveThreshold (default 1000 USDT)",
        );
      }
      if (o.event === "withdrawal.pending") {
        say(
          `withdrawal ${w.id} waits for approval: withdrawal.pending sent (approve or reject it to finish)`,
        );
        return w.id;
      }
      w = await api.request<Withdrawal>("POST", `/api/v1/public/withdrawal-requests/${w.id}/reject`, {
        reason: "stablegate-dev trigger withdrawal.rejected",
      });
      say(`withdrawal ${w.id} rejected: withdrawal.pending then withdrawal.rejected sent`);
      return w.id;
    }
    if (w.status === "pending") {
      // autoWithdraw off or a lower threshold: approving it is what executes it.
      say(
        `withdrawal ${w.id} waits for approval here (autoWithdraw off or amount above the threshold): approving it`,
      );
      await api.request("POST", `/api/v1/public/withdrawal-requests/${w.id}/approve`, {});
    }
    const want = o.event === "withdrawal.failed" ? "failed" : "completed";
    await waitStatus(get, ["completed", "failed", "rejected"], want, o.waitMs ?? 120_000);
    say(`withdrawal ${w.id} ${want}: withdrawal.${want} sent`);
    return w.id;
  }

  /** Tops the available balance up to `amount` from the faucet (a deposit, with its own deposit.confirmed). */
  async function ensureAvailable(amount: number): Promise<void> {
    const available = async () =>
      (await api.request<Balance[]>("GET", "/api/v1/public/balance")).find(
        (b) => b.currencyType === o.currency,
      )?.available ?? 0;
    const have = await available();
    if (have >= amount) return;
    const missing = Math.ceil((amount - have) * 1e6) / 1e6;
    const wallet = await api.request<{ address?: string; walletAddress?: string }>(
      "POST",
      "/wallet/generate",
      {
        currencyType: o.currency,
        label: "stablegate-dev trigger funding",
      },
    );
    const address = wallet.walletAddress ?? wallet.address;
    if (!address) throw new TriggerError("the gateway's /wallet/generate answer carries no address");
    await api.request("POST", `/api/v1/sandbox/wallet/${address}/pay`, {
      amount: missing,
      currencyType: o.currency,
    });
    say(
      `funded the sandbox balance with ${missing} ${o.currency} (a deposit to ${address}: deposit.confirmed sent)`,
    );
    const deadline = Date.now() + (o.waitMs ?? 120_000);
    while ((await available()) < amount) {
      if (Date.now() > deadline) throw new TriggerError("the funding deposit was not credited in time");
      await pause(250);
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

export { ApiError };

function pause(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
