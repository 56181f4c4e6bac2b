/**
 * Where the exchange rates of prices in fiat come from (docs/decisions/prices.md): one interface,
 * several sources — `fixed` (the operator's `FIXED_RATES`) and the public tickers (`coinbase`,
 * `kraken`), chosen by `EXCHANGE_RATE_SOURCE`. A rate is token units per unit of fiat as a bigint
 * of 10^-18 units (`domain/exchange-rate.ts`). A source never throws for a provider's fault: no
 * fresh rate is `null`, which the caller answers 503 RATE_UNAVAILABLE.
 */

/** The token a rate is for (USD stablecoins: USDT, USDC). */
export type RateToken = string;

/** A rate as locked into a session: its value, where it came from, and when it was quoted. */
export interface RateQuote {
  /** Token units per unit of fiat, 10^-18 units. */
  rate: bigint;
  /** `EXCHANGE_RATE_SOURCE`: `fixed`, `coinbase`, `kraken`. */
  source: string;
  /** When the source quoted it (a ticker: when its answer arrived; fixed: now). */
  at: Date;
}

export interface RateSource {
  readonly name: string;
  /** Whether the source quotes this ISO 4217 currency at all (else the price is a 400). */
  quotes(currency: string): boolean;
  /** The fresh rate of `currency` for `token`, or null (none known within the maximum age). */
  rate(token: RateToken, currency: string): Promise<RateQuote | null>;
}

/**
 * One public ticker's HTTP shape: the request for a (token, fiat) pair and how its answer reads.
 * `read` gets the parsed JSON of a 200 answer, whatever it holds: anything but the documented shape
 * with a usable quote is null.
 */
export interface TickerProvider {
  readonly name: string;
  /** The provider's public API root; `EXCHANGE_RATE_URL` replaces it (tests: a local fake). */
  readonly defaultBaseUrl: string;
  quotes(currency: string): boolean;
  /** The request path and query under the base URL. */
  path(token: RateToken, currency: string): string;
  read(body: unknown, token: RateToken, currency: string): bigint | null;
}
