import type { FieldError } from "./errors.js";

/**
 * Money (ARCHITECTURE.md#money). Inside the service an amount is a bigint of base units (USDT has 6
 * decimals on both networks). At the edge it is a JSON number in USDT, or a numeric string.
 */
export const DECIMALS = 6;
export const UNIT = 10n ** BigInt(DECIMALS);
/** The largest amount a request may carry: 1,000,000,000 USDT. */
export const MAX_AMOUNT = 1_000_000_000n * UNIT;
/**
 * The largest amount that can be written as an exact JSON number (2^53 - 1 base units, about
 * 9,007,199,254 USDT). Request amounts stay far below; balances above it are refused rather than
 * rounded.
 */
export const MAX_EXACT_JSON_UNITS = BigInt(Number.MAX_SAFE_INTEGER);

const DECIMAL = /^(\d{1,16})(?:\.(\d{1,32}))?$/;

export type AmountResult = { ok: true; units: bigint } | { ok: false; message: string };

/**
 * Parses a request amount exactly: a JSON number (as the lossless body parser delivers it: a JS
 * number when it round-trips, its exact decimal text otherwise) or a numeric string. Positive,
 * at most 6 decimal places, at most 1,000,000,000. Exponent forms are accepted for numbers only
 * and only when the value they denote satisfies the same rules.
 */
export function parseAmount(input: unknown): AmountResult {
  let text: string;
  if (typeof input === "number") {
    if (!Number.isFinite(input)) return { ok: false, message: "must be a finite number" };
    text = expandExponent(String(input));
  } else if (typeof input === "string") {
    text = input;
  } else {
    return { ok: false, message: "must be a number or a numeric string" };
  }
  if (text.startsWith("-")) return { ok: false, message: "must be positive" };
  const m = DECIMAL.exec(text);
  if (!m) return { ok: false, message: "must be a decimal amount such as 12.5" };
  const [, whole = "0", frac = ""] = m;
  const trimmed = frac.replace(/0+$/, "");
  if (trimmed.length > DECIMALS)
    return { ok: false, message: `must have at most ${DECIMALS} decimal places` };
  const units = BigInt(whole) * UNIT + BigInt(trimmed.padEnd(DECIMALS, "0") || "0");
  if (units <= 0n) return { ok: false, message: "must be greater than 0" };
  if (units > MAX_AMOUNT) return { ok: false, message: "must be at most 1000000000" };
  return { ok: true, units };
}

/** `parseAmount` for a named field, as a list of field errors (empty when valid). */
export function amountField(
  field: string,
  input: unknown,
): { units: bigint | undefined; errors: FieldError[] } {
  const r = parseAmount(input);
  return r.ok
    ? { units: r.units, errors: [] }
    : { units: undefined, errors: [{ field, message: r.message }] };
}

/** Exact decimal text of base units: 12500000n → "12.5". */
export function formatUnits(units: bigint): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / UNIT;
  const frac = (abs % UNIT).toString().padStart(DECIMALS, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

/**
 * Base units as a JSON number in USDT: 12500000n → 12.5. Exact: the number is parsed from the
 * exact decimal text, and amounts beyond what a double holds exactly are refused.
 */
export function formatAmount(units: bigint): number {
  if (units > MAX_EXACT_JSON_UNITS || units < -MAX_EXACT_JSON_UNITS) {
    throw new RangeError(`amount ${units} base units cannot be written exactly as a JSON number`);
  }
  return Number(formatUnits(units));
}

/** Expands "1e-7" / "1.5e+21" to plain decimal text (JS prints small and huge numbers this way). */
function expandExponent(s: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/i.exec(s);
  if (!m) return s;
  const [, sign = "", int = "", frac = "", expText = "0"] = m;
  const exp = Number(expText);
  const digits = int + frac;
  const point = int.length + exp;
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + "0".repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
