import { AppError } from "../domain/errors.js";
import type { RateQuote, RateSource } from "./source.js";

/**
 * The rate a new session locks: the source's fresh rate of `currency` for `token`, or 503
 * RATE_UNAVAILABLE (with Retry-After: `http/errors.ts`) when it has none within the maximum age.
 */
export async function lockRate(source: RateSource, token: string, currency: string): Promise<RateQuote> {
  const quote = await source.rate(token, currency);
  if (!quote) {
    throw new AppError(
      "RATE_UNAVAILABLE",
      `No fresh ${token}/${currency} exchange rate is available from ${source.name}; retry shortly.`,
      { currency, source: source.name },
    );
  }
  return quote;
}
