import { rateFromQuote } from "../domain/exchange-rate.js";
import { field } from "./coinbase.js";
import type { TickerProvider } from "./source.js";

/** The fiat currencies Kraken lists against USDT and USDC. */
const KRAKEN_FIAT = new Set(["USD", "EUR", "GBP", "CAD", "AUD", "CHF", "JPY"]);

/**
 * Kraken's public ticker (no key): `GET /0/public/Ticker?pair=USDTEUR` answers
 * `{ "error": [], "result": { "USDTEUR": { "a": [ask, …], "b": [bid, …], "c": [last, volume], … } } }`
 * — the price of ONE token in the fiat currency. The rate is the inverse of the last trade's price
 * (`c[0]`). The result is keyed by Kraken's own name of the pair (`USDTZUSD` for USDTUSD): the
 * one entry of `result`, named like the pair, is read; an answer with errors, with other than one
 * pair or another pair's name, is no rate.
 */
export const kraken: TickerProvider = {
  name: "kraken",
  defaultBaseUrl: "https://api.kraken.com",
  quotes: (currency) => KRAKEN_FIAT.has(currency),
  path: (token, currency) => `/0/public/Ticker?pair=${encodeURIComponent(`${token}${currency}`)}`,
  read(body, token, currency) {
    const errors = field(body, "error");
    if (!Array.isArray(errors) || errors.length > 0) return null;
    const result = field(body, "result");
    if (typeof result !== "object" || result === null || Array.isArray(result)) return null;
    const entries = Object.entries(result);
    // Kraken's name of the pair: the asked one, or with its asset prefixes (`USDTZUSD`, `XXBTZEUR`).
    const [only] = entries;
    if (entries.length !== 1 || !only || !pairName(token, currency).test(only[0])) return null;
    const last = field(only[1], "c");
    return Array.isArray(last) ? rateFromQuote(last[0], false) : null;
  },
};

function pairName(token: string, currency: string): RegExp {
  return new RegExp(`^X?${token.replace(/[^A-Z]/g, "")}Z?${currency.replace(/[^A-Z]/g, "")}$`);
}
