import type { Clock } from "../lib/clock.js";
import { fetchJson } from "./fetch-json.js";
import type { RateQuote, RateSource, TickerProvider } from "./source.js";

export interface TickerOptions {
  /** The provider's API root (`EXCHANGE_RATE_URL`); its public one when absent. */
  baseUrl?: string | undefined;
  /** `EXCHANGE_RATE_TIMEOUT_MS`: the longest one request may take. */
  timeoutMs: number;
  /** `EXCHANGE_RATE_MAX_AGE_SECONDS` in ms: an older quote is no rate. */
  maxAgeMs: number;
  clock: Clock;
  /** Told of a quote refused for jumping too far from the last good one (the runtime logs an alert). */
  onRefused?: (r: { source: string; pair: string; last: bigint; quoted: bigint }) => void;
  /** A quote older than this is asked again (in the background while still usable); default min(60 s, maxAge / 2). */
  refreshAfterMs?: number;
}

/** How far (percent) one quote may move from the last good one of the same pair. */
export const MAX_JUMP_PERCENT = 10n;

/** Whether `next` is within MAX_JUMP_PERCENT of `last` (both rates > 0, exact integers). */
export function withinJump(last: bigint, next: bigint): boolean {
  const diff = next > last ? next - last : last - next;
  return diff * 100n <= last * MAX_JUMP_PERCENT;
}

/**
 * A public ticker as a rate source: each (token, fiat) pair's last good quote cached with the time
 * it arrived. A quote younger than `refreshAfterMs` is used as is; an older one that is still
 * within the maximum age is used while one request (shared by every caller) fetches a new one;
 * without a usable quote the caller waits for that request. When the provider fails (down, slow,
 * malformed, hostile), the cached quote serves until it is older than the maximum age, then there
 * is no rate (503 RATE_UNAVAILABLE), never an error of ours.
 */
export function tickerRates(provider: TickerProvider, options: TickerOptions): RateSource {
  const base = (options.baseUrl ?? provider.defaultBaseUrl).replace(/\/+$/, "");
  const refreshAfterMs = options.refreshAfterMs ?? Math.min(60_000, options.maxAgeMs / 2);
  const cache = new Map<string, { rate: bigint; at: number }>();
  /** The last quote taken per pair, however old: a new one is measured against it. */
  const lastGood = new Map<string, bigint>();
  const inFlight = new Map<string, Promise<void>>();

  function refresh(key: string, token: string, currency: string): Promise<void> {
    let pending = inFlight.get(key);
    if (!pending) {
      pending = (async () => {
        const body = await fetchJson(base + provider.path(token, currency), { timeoutMs: options.timeoutMs });
        let rate: bigint | null = null;
        try {
          rate = body === null ? null : provider.read(body, token, currency);
        } catch {
          rate = null;
        }
        if (rate === null) return;
        // One provider alone does not move a price by more than MAX_JUMP_PERCENT between two
        // quotes (outside review of issue #41: a hostile or glitching ticker made 100 EUR cost
        // 0.001 USDT). The jump is not taken: the last good quote serves until it is too old, then
        // there is no rate (503 RATE_UNAVAILABLE) until the ticker agrees again or the operator
        // restarts the process (docs/decisions/prices.md).
        const last = lastGood.get(key);
        if (last !== undefined && !withinJump(last, rate)) {
          options.onRefused?.({ source: provider.name, pair: key, last, quoted: rate });
          return;
        }
        lastGood.set(key, rate);
        cache.set(key, { rate, at: options.clock.now() });
      })().finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  }

  const usable = (key: string) => {
    const q = cache.get(key);
    return q && options.clock.now() - q.at <= options.maxAgeMs ? q : undefined;
  };

  return {
    name: provider.name,
    quotes: (currency) => provider.quotes(currency),
    async rate(token, currency): Promise<RateQuote | null> {
      const key = `${token}/${currency}`;
      const cached = usable(key);
      if (!cached) await refresh(key, token, currency);
      else if (options.clock.now() - cached.at >= refreshAfterMs) void refresh(key, token, currency);
      const q = usable(key);
      return q ? { rate: q.rate, source: provider.name, at: new Date(q.at) } : null;
    },
  };
}
