import { describe, expect, it } from "vitest";
import { chooseEnergy, type EnergyPolicy, energyPolicyOf, nextStake } from "../../src/energy/index.js";

// Issue #38: the energy engine's pure rules — when a transfer short of energy delegates, waits or
// burns, and what the resource account stakes next.

const TRX = (n: number) => BigInt(n) * 1_000_000n;
const policy: EnergyPolicy = energyPolicyOf({
  energyMaxWaitSeconds: 3_600,
  burnCeilingSun: 2_000_000,
  resourceReserveSun: 10_000_000,
  bandwidthStakePercent: 6,
});

describe("chooseEnergy", () => {
  it.each([
    [
      "the resource account can delegate",
      { canDelegate: true, staked: true, burnSun: TRX(20), waitedMs: 0 },
      "delegate",
    ],
    [
      "nothing is staked: no engine, the fee burns as before",
      { canDelegate: false, staked: false, burnSun: TRX(20), waitedMs: 0 },
      "burn",
    ],
    ["staked but used up: wait", { canDelegate: false, staked: true, burnSun: TRX(20), waitedMs: 0 }, "wait"],
    [
      "still within the delay",
      { canDelegate: false, staked: true, burnSun: TRX(20), waitedMs: 3_599_999 },
      "wait",
    ],
    [
      "past the delay: burn",
      { canDelegate: false, staked: true, burnSun: TRX(20), waitedMs: 3_600_000 },
      "burn",
    ],
    [
      "a burn under the ceiling is paid at once",
      { canDelegate: false, staked: true, burnSun: TRX(2), waitedMs: 0 },
      "burn",
    ],
    // Energy rental (decision 21): rented at once without a stake, after the wait with one, and
    // only when it costs less than the burn.
    [
      "no stake, a rental cheaper than the burn: rent",
      { canDelegate: false, staked: false, burnSun: TRX(20), waitedMs: 0, rentSun: TRX(4) },
      "rent",
    ],
    [
      "no stake, a rental dearer than the burn: burn",
      { canDelegate: false, staked: false, burnSun: TRX(20), waitedMs: 0, rentSun: TRX(21) },
      "burn",
    ],
    [
      "no stake, no rental price (none configured, or no answer): burn",
      { canDelegate: false, staked: false, burnSun: TRX(20), waitedMs: 0, rentSun: null },
      "burn",
    ],
    [
      "a stake of its own: waiting for it is free, no rental within the delay",
      { canDelegate: false, staked: true, burnSun: TRX(20), waitedMs: 0, rentSun: TRX(4) },
      "wait",
    ],
    [
      "a stake past the delay: rent rather than burn",
      { canDelegate: false, staked: true, burnSun: TRX(20), waitedMs: 3_600_000, rentSun: TRX(4) },
      "rent",
    ],
    [
      "the resource account can delegate: no rental",
      { canDelegate: true, staked: true, burnSun: TRX(20), waitedMs: 0, rentSun: TRX(1) },
      "delegate",
    ],
    [
      "a burn under the ceiling: no rental",
      { canDelegate: false, staked: false, burnSun: TRX(2), waitedMs: 0, rentSun: TRX(1) },
      "burn",
    ],
  ] as const)("%s", (_what, s, expected) => {
    expect(chooseEnergy(policy, s)).toBe(expected);
  });
});

describe("nextStake", () => {
  it("keeps the reserve, stakes whole TRX, bandwidth first up to its share, then energy", () => {
    // 1,010.5 TRX: 1,000 whole TRX above the 10 TRX reserve; 6 % of the whole stake for bandwidth.
    expect(nextStake(policy, TRX(1_010) + 500_000n, { energy: 0n, bandwidth: 0n })).toEqual({
      asset: "bandwidth",
      sun: TRX(60),
    });
    expect(nextStake(policy, TRX(950), { energy: 0n, bandwidth: TRX(60) })).toEqual({
      asset: "energy",
      sun: TRX(940),
    });
    // Below one whole TRX above the reserve: nothing.
    expect(nextStake(policy, TRX(10) + 999_999n, { energy: 0n, bandwidth: 0n })).toBeNull();
    expect(nextStake(policy, TRX(3), { energy: TRX(100), bandwidth: 0n })).toBeNull();
  });
});
