import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USDT } from "../../sender/support.js";
import { deposit, parts, rentals, settle, startWorld, transfers, type World } from "./setup.js";

// Attack: the provider quotes 1 sun/unit when the sweep is planned (the rent-vs-burn decision, on a
// quote cached up to a minute), then 900 sun/unit for the fresh quote just before the order. The
// order is only checked against the operator's cap (TRC20_RENTAL_MAX_SUN_PER_ENERGY, accepted up to
// 10,000 sun), never against the burn again: README promises energy is rented "when the provider's
// price is below the burn" (210 sun here), yet the gateway pays >4x the burn.
// Now refused: each rental records the burn it replaces (`max_sun`); a fresher quote above it is
// not ordered (the rental is refused, the sweep burns). The cap is limited to 1,000 sun.

let w: World;
beforeAll(async () => {
  w = await startWorld();
}, 120_000);
afterAll(async () => {
  await w?.stop();
});

describe("attack: cheap quote at planning, dear quote at ordering (cap above the burn)", () => {
  it("the order is never placed at a price above the burn", async () => {
    const p = parts(w, { maxSunPerEnergy: 1_000 }); // accepted by config (max 10,000)
    w.provider.quotePrice = 1;
    const a = await deposit(w, 0, USDT(20));
    expect(await p.sweeper.tick()).toBe(1);
    expect((await rentals(w)).filter((r) => r.receiver === a)).toHaveLength(1);
    w.provider.quotePrice = 900; // under the cap, 4.3x the 210-sun burn
    expect(await settle(w, p)).toBe(true);
    const [sweep] = (await transfers(w, "sweep")).filter((s) => Number(s.from_index) === 100);
    const burnPerUnit = 210;
    const paidPerUnit = w.provider.orders.map((o) => o.amount / o.energy);
    expect(
      paidPerUnit.every((x) => x < burnPerUnit),
      `sweep ${sweep?.status}; paid per unit ${paidPerUnit}; rentals ${JSON.stringify(await rentals(w), (_k, v) => (typeof v === "bigint" ? v.toString() : v))}`,
    ).toBe(true);
  }, 180_000);
});
