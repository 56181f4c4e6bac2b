import fc from "fast-check";
import { parse } from "lossless-json";
import { describe, expect, it } from "vitest";
import { formatAmount, formatUnits, MAX_AMOUNT, parseAmount, UNIT } from "../../src/domain/money.js";
import { exactNumber } from "../../src/http/json-body.js";

/** What a request amount goes through: JSON text → lossless body parser → parseAmount. */
function fromJson(literal: string) {
  return parseAmount((parse(`{"amount": ${literal}}`, null, exactNumber) as { amount: unknown }).amount);
}

const validUnits = fc.bigInt({ min: 1n, max: MAX_AMOUNT });

describe("money: parse and format are exact", () => {
  it("format → JSON → parse round-trips every valid amount", () => {
    fc.assert(
      fc.property(validUnits, (units) => {
        const json = JSON.stringify({ amount: formatAmount(units) });
        const parsed = parseAmount((parse(json, null, exactNumber) as { amount: unknown }).amount);
        return parsed.ok && parsed.units === units;
      }),
      { numRuns: 5000 },
    );
  });

  it("numeric strings round-trip too, with or without trailing zeros", () => {
    fc.assert(
      fc.property(validUnits, fc.nat({ max: 3 }), (units, zeros) => {
        const text = formatUnits(units);
        const padded = text.includes(".") ? text + "0".repeat(zeros) : text;
        const r = parseAmount(padded);
        return r.ok && r.units === units;
      }),
    );
  });

  it("formats exact decimal text", () => {
    expect(formatUnits(12_500_000n)).toBe("12.5");
    expect(formatUnits(1n)).toBe("0.000001");
    expect(formatUnits(MAX_AMOUNT)).toBe("1000000000");
    expect(formatAmount(999_999_999_999_999n)).toBe(999999999.999999);
    expect(() => formatAmount(2n ** 53n)).toThrow(RangeError);
  });
});

describe("money: every rejection rule", () => {
  const rejects = (r: ReturnType<typeof parseAmount>, message: RegExp) => {
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(message);
  };

  it("more than 6 decimals, as number, string or digits a double cannot hold", () => {
    rejects(parseAmount(1.0000001), /6 decimal/);
    rejects(parseAmount("1.0000001"), /6 decimal/);
    rejects(fromJson("999999999.9999999"), /6 decimal/);
    rejects(fromJson("0.0000001"), /6 decimal/);
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n }), fc.integer({ min: 1, max: 9 }), (units, extra) => {
        // A valid amount with one more non-zero decimal digit.
        const text = `${formatUnits(units * UNIT)}.000000${extra}`;
        const r = parseAmount(text);
        return !r.ok;
      }),
    );
  });

  it("zero, negative, NaN, infinities, non-numbers", () => {
    for (const v of [
      0,
      -0,
      "0",
      "0.000000",
      -1,
      "-1",
      -0.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      null,
      true,
      {},
      [],
      "",
      " 1",
      "1 ",
      "+1",
      "1,5",
      "0x10",
      "abc",
      "1e3",
      "12.",
      ".5",
    ]) {
      expect(parseAmount(v).ok, JSON.stringify(v)).toBe(false);
    }
    fc.assert(fc.property(fc.double({ max: 0, noNaN: true }), (d) => !parseAmount(d).ok));
  });

  it("above 1,000,000,000 and exponents that leave the range", () => {
    rejects(parseAmount(1_000_000_000.000001), /at most 1000000000/);
    rejects(parseAmount("1000000001"), /at most 1000000000/);
    rejects(fromJson("1e10"), /at most 1000000000/);
    rejects(fromJson("1e400"), /decimal amount/);
    rejects(fromJson("1e-7"), /6 decimal/);
    rejects(fromJson("123456789012345678901234567890"), /decimal amount|at most/);
    expect(fromJson("1e3")).toEqual({ ok: true, units: 1000n * UNIT });
    expect(fromJson("1.5e2")).toEqual({ ok: true, units: 150n * UNIT });
    expect(fromJson("12.50")).toEqual({ ok: true, units: 12_500_000n });
  });
});
