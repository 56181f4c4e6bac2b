import { DECIMALS, MAX_AMOUNT } from "./money.js";

/**
 * Exchange rates of prices in fiat (docs/decisions/prices.md). A rate is how many token units (USD
 * for the USD stablecoins) one unit of the fiat currency is worth — `EUR=1.08`: 1 EUR = 1.08 USDT —
 * held exactly as a bigint of 10^-18 units, never a float: parsed from decimal text, and the
 * inverse of a ticker's quote (EUR per USDT) rounded half up at the 18th decimal. A session's token
 * amount is `priceAmount × rate`, rounded UP to a whole base unit (the merchant never receives less
 * than the price).
 */

/** Decimal places of a rate: 10^-18 units. */
export const RATE_DECIMALS = 18;
const RATE_SCALE = 10n ** BigInt(RATE_DECIMALS);
/**
 * The range a rate must fall in (token units per unit of fiat): no fiat currency is worth less than
 * a billionth of a dollar or more than ten thousand; a quote outside it is a provider's error.
 */
export const MIN_RATE = RATE_SCALE / 1_000_000_000n;
export const MAX_RATE = 10_000n * RATE_SCALE;

const DECIMAL_TEXT = /^(\d{1,20})(?:\.(\d{1,30}))?$/;

/** An exact decimal `digits / 10^scale` from text such as "1.08"; null for anything else. */
function decimalOf(text: string): { digits: bigint; scale: number } | null {
  const m = DECIMAL_TEXT.exec(text);
  if (!m) return null;
  const [, whole = "0", fraction = ""] = m;
  return { digits: BigInt(whole + fraction), scale: fraction.length };
}

/** `numerator / denominator` rounded half up (both positive). */
function roundedDiv(numerator: bigint, denominator: bigint): bigint {
  return (numerator * 2n + denominator) / (denominator * 2n);
}

function inRange(units: bigint): boolean {
  return units >= MIN_RATE && units <= MAX_RATE;
}

/**
 * A rate written as the decimal text of token units per unit of fiat ("1.08"), as configured
 * (`FIXED_RATES`): at most 18 decimals, within `MIN_RATE`..`MAX_RATE`.
 */
export function parseRate(text: string): { ok: true; units: bigint } | { ok: false; message: string } {
  const d = decimalOf(text.trim());
  if (!d) return { ok: false, message: `"${text}" is not a decimal number such as 1.08` };
  if (d.scale > RATE_DECIMALS) return { ok: false, message: `"${text}" has more than 18 decimal places` };
  const units = d.digits * 10n ** BigInt(RATE_DECIMALS - d.scale);
  if (!inRange(units)) return { ok: false, message: `"${text}" is outside 0.000000001..10000` };
  return { ok: true, units };
}

/**
 * A provider's quote as a rate: `direct` quotes token units per unit of fiat; otherwise the quote
 * is the fiat price of one token unit (EUR per USDT) and the rate is its inverse, rounded half up
 * at the 18th decimal. Anything that is not a plain positive decimal, or whose rate falls outside
 * the range, is null: no rate.
 */
export function rateFromQuote(quote: unknown, direct: boolean): bigint | null {
  if (typeof quote !== "string" || quote.length > 52) return null;
  const d = decimalOf(quote);
  if (!d || d.digits === 0n) return null;
  const pow = 10n ** BigInt(d.scale);
  const units = direct ? roundedDiv(d.digits * RATE_SCALE, pow) : roundedDiv(pow * RATE_SCALE, d.digits);
  return inRange(units) ? units : null;
}

/** A rate as exact decimal text: 1080000000000000000n → "1.08". */
export function formatRate(units: bigint): string {
  const whole = units / RATE_SCALE;
  const fraction = (units % RATE_SCALE).toString().padStart(RATE_DECIMALS, "0").replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}

/**
 * The token amount of a price (both in base units of 10^-6): `price × rate`, rounded UP to a whole
 * base unit, so the merchant receives at least the price's worth at the locked rate.
 */
export function tokenAmountOfPrice(priceUnits: bigint, rateUnits: bigint): bigint {
  const product = priceUnits * rateUnits;
  return (product + RATE_SCALE - 1n) / RATE_SCALE;
}

/** Whether a token amount of a converted price is one a session may ask for (at most 1,000,000,000). */
export function tokenAmountAllowed(units: bigint): boolean {
  return units > 0n && units <= MAX_AMOUNT;
}

/** An ISO 4217 code as the API takes it: three upper-case letters. */
export const CURRENCY_CODE = /^[A-Z]{3}$/;

/** The ISO 4217 codes this runtime knows (Node's ICU data: `Intl.supportedValuesOf`). */
export function isIsoCurrency(code: string): boolean {
  return CURRENCY_CODE.test(code) && ISO_CURRENCIES.has(code);
}

const ISO_CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf("currency"));

/**
 * `FIXED_RATES` ("EUR=1.08,GBP=1.27": token units per unit of fiat) as rates by currency; an empty
 * text is no rates. Each entry is an ISO 4217 code, once, and a rate `parseRate` accepts.
 */
export function parseFixedRates(
  text: string,
): { ok: true; rates: Map<string, bigint> } | { ok: false; message: string } {
  const rates = new Map<string, bigint>();
  for (const raw of text.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const [code = "", value, ...rest] = entry.split("=").map((s) => s.trim());
    if (value === undefined || rest.length > 0)
      return { ok: false, message: `"${entry}" is not CODE=RATE (e.g. EUR=1.08)` };
    if (!isIsoCurrency(code)) return { ok: false, message: `"${code}" is not an ISO 4217 currency code` };
    if (rates.has(code)) return { ok: false, message: `${code} is given twice` };
    const rate = parseRate(value);
    if (!rate.ok) return { ok: false, message: `${code}: ${rate.message}` };
    rates.set(code, rate.units);
  }
  return { ok: true, rates };
}

/** The decimals of a price: those of a token amount (a price is parsed as one: `parseAmount`). */
export const PRICE_DECIMALS = DECIMALS;
