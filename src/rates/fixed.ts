import type { Clock } from "../lib/clock.js";
import type { RateQuote, RateSource } from "./source.js";

/** A USD stablecoin is worth one dollar unless `FIXED_RATES` says otherwise. */
const ONE = 10n ** 18n;

/**
 * `EXCHANGE_RATE_SOURCE=fixed`: the operator's `FIXED_RATES` (token units per unit of fiat, the
 * same for every USD stablecoin), plus USD at 1 unless listed. Never stale: quoted at `now`.
 */
export function fixedRates(rates: ReadonlyMap<string, bigint>, clock: Clock): RateSource {
  const table = new Map(rates);
  if (!table.has("USD")) table.set("USD", ONE);
  return {
    name: "fixed",
    quotes: (currency) => table.has(currency),
    async rate(_token, currency): Promise<RateQuote | null> {
      const rate = table.get(currency);
      return rate === undefined ? null : { rate, source: "fixed", at: new Date(clock.now()) };
    },
  };
}
