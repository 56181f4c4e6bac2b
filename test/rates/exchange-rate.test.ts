import { describe, expect, it } from "vitest";
import {
  formatRate,
  MAX_RATE,
  MIN_RATE,
  parseFixedRates,
  parseRate,
  rateFromQuote,
  tokenAmountAllowed,
  tokenAmountOfPrice,
} from "../../src/domain/exchange-rate.js";
import { parseAmount } from "../../src/domain/money.js";

// The arithmetic of prices in fiat (docs/decisions/prices.md): rates exact from decimal text,
// the token amount `price × rate` rounded UP to 6 decimals, never a float.

const units = (text: string) => {
  const r = parseAmount(text);
  if (!r.ok) throw new Error(r.message);
  return r.units;
};
/** Exact base units of decimal text, without the request maximum (the largest product). */
const baseUnits = (text: string) => {
  const [whole = "0", fraction = ""] = text.split(".");
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, "0"));
};
const rate = (text: string) => {
  const r = parseRate(text);
  if (!r.ok) throw new Error(r.message);
  return r.units;
};

describe("tokenAmountOfPrice: price × rate rounded up to a whole base unit (6 decimals)", () => {
  it.each([
    // [price, rate, token amount]
    ["10.00", "1.08", "10.8"], // exact: 10 EUR at 1.08 = 10.80 USDT
    ["46.3", "1.08", "50.004"], // exact with three decimals
    ["1", "1", "1"], // USD 1:1
    ["0.1", "1.27", "0.127"], // exact, GBP
    ["10", "1.0000001", "10.000001"], // 10.000001 exactly: no rounding
    ["10", "1.00000011", "10.000002"], // 10.0000011 → one base unit over: rounded up
    ["0.000001", "0.5", "0.000001"], // tiny: half a base unit → 1 base unit, never 0
    ["0.000001", "0.000000001", "0.000001"], // the smallest price at the smallest rate: still 1 unit
    ["3", "0.333333333333333333", "1"], // 0.999999999999999999 → 1.000000
    ["999999999.999999", "1.000000000000000001", "1000000000"], // large: 999999999.999999001 → up one unit
    ["1000000000", "10000", "10000000000000"], // the largest price at the largest rate (refused later)
  ])("%s × %s = %s", (price, r, expected) => {
    expect(tokenAmountOfPrice(units(price), rate(r))).toBe(baseUnits(expected));
  });

  it("an amount above 1000000000 after conversion is refused", () => {
    expect(tokenAmountAllowed(tokenAmountOfPrice(units("1000000000"), rate("1.08")))).toBe(false);
    expect(tokenAmountAllowed(tokenAmountOfPrice(units("925925925"), rate("1.08")))).toBe(true);
  });
});

describe("rates from text", () => {
  it("parseRate: exact, at most 18 decimals, within the range", () => {
    expect(rate("1.08")).toBe(1_080_000_000_000_000_000n);
    expect(formatRate(rate("1.080"))).toBe("1.08");
    expect(formatRate(rate("0.000000001"))).toBe("0.000000001");
    for (const bad of [
      "",
      "-1",
      "0",
      "1e3",
      "abc",
      "1.0000000000000000001",
      "10000.1",
      "0.0000000009",
      " ",
      "0x10",
    ]) {
      expect(parseRate(bad).ok, bad).toBe(false);
    }
  });

  it("rateFromQuote: a ticker's EUR-per-token quote inverted, rounded half up at the 18th decimal", () => {
    expect(rateFromQuote("0.8", false)).toBe(1_250_000_000_000_000_000n);
    expect(formatRate(rateFromQuote("0.92", false) as bigint)).toBe("1.086956521739130435");
    expect(formatRate(rateFromQuote("3", false) as bigint)).toBe("0.333333333333333333");
    expect(formatRate(rateFromQuote("1.5", true) as bigint)).toBe("1.5");
  });

  it.each([
    ["negative", "-0.92"],
    ["zero", "0"],
    ["zero with decimals", "0.000"],
    ["huge (inverse below the range)", "99999999999999"],
    ["tiny (inverse above the range)", "0.00000001"],
    ["exponent", "9.2e-1"],
    ["a number, not a string", 0.92],
    ["null", null],
    ["an object", { value: "0.92" }],
    ["too long", `0.${"9".repeat(60)}`],
    ["NaN", "NaN"],
  ])("rateFromQuote refuses %s: no rate", (_name, quote) => {
    expect(rateFromQuote(quote, false)).toBeNull();
  });

  it("the range", () => {
    expect(MIN_RATE).toBe(1_000_000_000n);
    expect(MAX_RATE).toBe(10_000n * 10n ** 18n);
  });
});

describe("FIXED_RATES", () => {
  it("parses CODE=RATE pairs", () => {
    const r = parseFixedRates("EUR=1.08, GBP=1.27,");
    expect(r.ok && [...r.rates.entries()]).toEqual([
      ["EUR", 1_080_000_000_000_000_000n],
      ["GBP", 1_270_000_000_000_000_000n],
    ]);
    expect(parseFixedRates("").ok).toBe(true);
  });

  it.each([
    ["not a pair", "EUR"],
    ["not a code", "EURO=1.08"],
    ["lower case", "eur=1.08"],
    ["unknown code", "XYZ=1"],
    ["twice", "EUR=1.08,EUR=1.09"],
    ["zero", "EUR=0"],
    ["negative", "EUR=-1.08"],
    ["two equals", "EUR=1=2"],
    ["too many decimals", "EUR=1.0000000000000000001"],
  ])("refuses %s", (_name, text) => {
    const r = parseFixedRates(text);
    expect(r.ok).toBe(false);
  });
});
