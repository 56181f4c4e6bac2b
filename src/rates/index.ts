/** Exchange rates of prices in fiat (docs/decisions/prices.md): the sources behind one interface. */
export { coinbase } from "./coinbase.js";
export { createRateSource, TICKERS } from "./create.js";
export { fetchJson } from "./fetch-json.js";
export { fixedRates } from "./fixed.js";
export { kraken } from "./kraken.js";
export { lockRate } from "./lock.js";
export type { RateQuote, RateSource, RateToken, TickerProvider } from "./source.js";
export { MAX_JUMP_PERCENT, tickerRates, withinJump } from "./ticker.js";
