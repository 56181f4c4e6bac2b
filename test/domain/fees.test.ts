import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { computeFee, DEFAULT_FEE_SCHEDULE, percentToPpm } from "../../src/domain/fees.js";
import { UNIT } from "../../src/domain/money.js";

describe("fees", () => {
  it("fixed + percent, percent rounded up to the next base unit, netAmount = amount - fee", () => {
    expect(computeFee({ fixed: UNIT, ppm: 0n }, 50n * UNIT)).toEqual({
      amount: 50n * UNIT,
      fee: UNIT,
      netAmount: 49n * UNIT,
    });
    expect(computeFee({ fixed: 0n, ppm: 5_000n }, 100n * UNIT).fee).toBe(500_000n); // 0.5 %
    expect(computeFee({ fixed: 0n, ppm: 5_000n }, 1n).fee).toBe(1n); // rounded up, never under-collected
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 15n }),
        fc.bigInt({ min: 0n, max: 10n ** 7n }),
        fc.bigInt({ min: 0n, max: 1_000_000n }),
        (amount, fixed, ppm) => {
          const q = computeFee({ fixed, ppm }, amount);
          const exact = (amount * ppm) / 1_000_000n;
          const pct = q.fee - fixed;
          return q.netAmount === amount - q.fee && pct >= exact && pct - exact <= 1n;
        },
      ),
    );
  });

  it("parses percents exactly", () => {
    expect(percentToPpm("0.5")).toBe(5_000n);
    expect(percentToPpm("1")).toBe(10_000n);
    expect(percentToPpm("0.0001")).toBe(1n);
    expect(percentToPpm("100")).toBe(1_000_000n);
    for (const bad of ["101", "0.00001", "-1", "abc", "1e2", ""]) expect(percentToPpm(bad)).toBeNull();
  });

  it("default schedule: free deposits, a network fee on withdrawals and payouts", () => {
    expect(DEFAULT_FEE_SCHEDULE["USDT-TRC20"].deposit).toEqual({ fixed: 0n, ppm: 0n });
    expect(DEFAULT_FEE_SCHEDULE["USDT-TRC20"].withdrawal.fixed).toBe(UNIT);
    expect(DEFAULT_FEE_SCHEDULE["USDT-ERC20"].payout.fixed).toBeGreaterThan(0n);
  });
});

describe("FEE_SCHEDULE", () => {
  it("overrides the defaults it names and keeps the rest", async () => {
    const { parseFeeSchedule } = await import("../../src/domain/fees.js");
    const r = parseFeeSchedule('{"USDT-ERC20": {"withdrawal": {"fixed": "2.5", "percent": "0.1"}}}');
    expect("schedule" in r && r.schedule["USDT-ERC20"].withdrawal).toEqual({
      fixed: 2_500_000n,
      ppm: 1_000n,
    });
    expect("schedule" in r && r.schedule["USDT-TRC20"]).toEqual(DEFAULT_FEE_SCHEDULE["USDT-TRC20"]);
    for (const bad of [
      "[]",
      "nope",
      '{"BTC": {}}',
      '{"USDT-TRC20": {"refund": {}}}',
      '{"USDT-TRC20": {"payout": {"fixed": "-1"}}}',
      '{"USDT-TRC20": {"payout": {"percent": "200"}}}',
    ]) {
      expect(parseFeeSchedule(bad)).toHaveProperty("error");
    }
  });

  it("a bad FEE_SCHEDULE stops start-up naming the variable", async () => {
    const { parseConfig } = await import("../../src/config/config.js");
    expect(() => parseConfig({ FEE_SCHEDULE: '{"USDT-TRC20": {"payout": {"fixed": "x"}}}' })).toThrow(
      /FEE_SCHEDULE/,
    );
    expect(
      parseConfig({ FEE_SCHEDULE: '{"USDT-TRC20": {"payout": {"fixed": "0"}}}' }).fees["USDT-TRC20"].payout
        .fixed,
    ).toBe(0n);
  });
});
