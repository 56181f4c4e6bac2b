import type { RatesConfig } from "../config/config.js";
import type { Clock } from "../lib/clock.js";
import { coinbase } from "./coinbase.js";
import { fixedRates } from "./fixed.js";
import { kraken } from "./kraken.js";
import type { RateSource, TickerProvider } from "./source.js";
import { tickerRates } from "./ticker.js";

/** The public tickers by their `EXCHANGE_RATE_SOURCE` name. */
export const TICKERS: Readonly<Record<Exclude<RatesConfig["source"], "fixed">, TickerProvider>> = {
  coinbase,
  kraken,
};

/** The process's one rate source, as `EXCHANGE_RATE_SOURCE` names it (built once by the runtime). */
export function createRateSource(
  config: RatesConfig,
  clock: Clock,
  onRefused?: (r: { source: string; pair: string; last: bigint; quoted: bigint }) => void,
): RateSource {
  if (config.source === "fixed") return fixedRates(config.fixed, clock);
  return tickerRates(TICKERS[config.source], {
    baseUrl: config.url,
    timeoutMs: config.timeoutMs,
    maxAgeMs: config.maxAgeSeconds * 1000,
    clock,
    onRefused,
  });
}
