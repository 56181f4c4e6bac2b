import { AccountResource } from "./resources/account.js";
import { BalanceResource } from "./resources/balance.js";
import { CheckoutSessions } from "./resources/checkout-sessions.js";
import { Currencies } from "./resources/currencies.js";
import { PaymentLinks } from "./resources/payment-links.js";
import { Payouts } from "./resources/payouts.js";
import { Sandbox } from "./resources/sandbox.js";
import { Transactions } from "./resources/transactions.js";
import { Wallets } from "./resources/wallets.js";
import { Webhooks } from "./resources/webhooks.js";
import { Withdrawals } from "./resources/withdrawals.js";
import { type ResponseInfo, Transport } from "./transport.js";

export type Environment = "sandbox" | "production";

/**
 * The base URL of each environment when no `baseUrl` is given: a local `npm start` of the gateway
 * (production on :8080, sandbox on :8081). A self-hosted gateway has its operator's URLs: pass
 * `baseUrl`, or set these once at start-up.
 */
export const DEFAULT_BASE_URLS: Record<Environment, string> = {
  production: "http://localhost:8080",
  sandbox: "http://localhost:8081",
};

export interface StablegateOptions {
  /** `ak_test_…` (sandbox) or `ak_live_…` (production). */
  apiKey: string;
  /** `sk_…`: required for withdrawals, approve/reject, the webhook URL and secret. */
  apiSecret?: string;
  /** Which environment's base URL to use; by default the one the key's prefix names. */
  environment?: Environment;
  /** The gateway's base URL for this key's environment; wins over `environment`. */
  baseUrl?: string;
  /** Another `fetch` (a proxy agent, tests); the global one by default. */
  fetch?: typeof fetch;
  /** Retries of a failed request where repeating is safe (default 2: three attempts in all). */
  maxRetries?: number;
  /** Per attempt (default 30 s). */
  timeoutMs?: number;
  /**
   * The longest `Retry-After` the client waits out on its own (default 60 s); a longer one (a
   * rate-limit window of 15 minutes) is thrown at once as a RateLimitError with `retryAfter`.
   */
  maxRetryWaitMs?: number;
  /** Called after every answer received (each attempt): logging, metrics. */
  onResponse?: (info: ResponseInfo) => void;
}

/** Which environment a key belongs to, from its prefix. */
export function environmentOfKey(apiKey: string): Environment | undefined {
  if (apiKey.startsWith("ak_test_")) return "sandbox";
  if (apiKey.startsWith("ak_live_")) return "production";
  return undefined;
}

/**
 * The stablegate API client.
 *
 * ```ts
 * const stablegate = new Stablegate({ apiKey, apiSecret, baseUrl: "https://sandbox.pay.example.com" });
 * const session = await stablegate.checkoutSessions.create({ amount: 25, currencyType: "USDT-TRC20" });
 * ```
 */
export class Stablegate {
  readonly baseUrl: string;
  readonly environment: Environment | undefined;
  readonly account: AccountResource;
  readonly balance: BalanceResource;
  readonly currencies: Currencies;
  readonly checkoutSessions: CheckoutSessions;
  readonly wallets: Wallets;
  readonly withdrawals: Withdrawals;
  readonly payouts: Payouts;
  readonly paymentLinks: PaymentLinks;
  readonly transactions: Transactions;
  readonly webhooks: Webhooks;
  readonly sandbox: Sandbox;

  constructor(options: StablegateOptions) {
    if (typeof options?.apiKey !== "string" || options.apiKey === "") {
      throw new TypeError("Stablegate: apiKey is required");
    }
    this.environment = options.environment ?? environmentOfKey(options.apiKey);
    const baseUrl = options.baseUrl ?? (this.environment ? DEFAULT_BASE_URLS[this.environment] : undefined);
    if (!baseUrl)
      throw new TypeError("Stablegate: give baseUrl or environment (the key's prefix names none)");
    this.baseUrl = baseUrl;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== "function")
      throw new TypeError("Stablegate: no fetch available; pass options.fetch");
    const http = new Transport({
      baseUrl,
      apiKey: options.apiKey,
      apiSecret: options.apiSecret,
      // Called unbound: a browser's fetch throws "Illegal invocation" when called on another object.
      fetch: (input, init) => fetchImpl(input, init),
      maxRetries: nonNegative(options.maxRetries, 2, "maxRetries"),
      timeoutMs: nonNegative(options.timeoutMs, 30_000, "timeoutMs"),
      maxRetryWaitMs: nonNegative(options.maxRetryWaitMs, 60_000, "maxRetryWaitMs"),
      onResponse: options.onResponse,
    });
    this.account = new AccountResource(http);
    this.balance = new BalanceResource(http);
    this.currencies = new Currencies(http);
    this.checkoutSessions = new CheckoutSessions(http);
    this.wallets = new Wallets(http);
    this.withdrawals = new Withdrawals(http);
    this.payouts = new Payouts(http);
    this.paymentLinks = new PaymentLinks(http);
    this.transactions = new Transactions(http);
    this.webhooks = new Webhooks(http);
    this.sandbox = new Sandbox(http);
  }
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`Stablegate: ${name} must be a number ≥ 0`);
  return value;
}
