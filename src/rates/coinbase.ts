import { isIsoCurrency, rateFromQuote } from "../domain/exchange-rate.js";
import type { TickerProvider } from "./source.js";

/**
 * Coinbase's public exchange rates (no key): `GET /v2/exchange-rates?currency=USDT` answers
 * `{ "data": { "currency": "USDT", "rates": { "EUR": "0.858", … } } }` — how many units of each
 * currency ONE token buys, as decimal strings. The rate of a price in EUR is its inverse. Coinbase
 * quotes every ISO 4217 currency it lists (USD included: a USD price then follows the token's quote).
 */
export const coinbase: TickerProvider = {
  name: "coinbase",
  defaultBaseUrl: "https://api.coinbase.com",
  quotes: (currency) => isIsoCurrency(currency),
  path: (token) => `/v2/exchange-rates?currency=${encodeURIComponent(token)}`,
  read(body, token, currency) {
    const data = field(body, "data");
    if (field(data, "currency") !== token) return null;
    return rateFromQuote(field(field(data, "rates"), currency), false);
  },
};

/** An own property of a plain object, else undefined (arrays, null and inherited names are not read). */
export function field(value: unknown, name: string): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  return Object.hasOwn(value, name) ? (value as Record<string, unknown>)[name] : undefined;
}
