import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { transferCosts } from "../../../src/sender/index.js";
import { USDT } from "../../sender/support.js";
import { deposit, parts, rentals, settle, startWorld, type World } from "./setup.js";

// Attack: a hostile (or compromised) provider quotes a price under the operator's cap, then answers
// the order with an `amount` far above the quote (and the cap). The gateway records whatever the
// answer says as the cost, with no alert: the books (`stablegate chain costs`, admin API, /metrics)
// can be inflated at will, and an overcharge goes unnoticed.
// Now refused: the booked cost is at most the quote the order was placed on; the claim is kept in
// the rental's reason and raised as `energy_rental_overcharged`.

let w: World;
beforeAll(async () => {
  w = await startWorld();
}, 120_000);
afterAll(async () => {
  await w?.stop();
});

describe("attack: the provider charges more than it quoted", () => {
  it("an order answered with amount = MAX_SAFE_INTEGER is not believed as the cost (bounded by quote / cap, and an alert)", async () => {
    const p = parts(w, { maxSunPerEnergy: 80 });
    w.provider.quotePrice = 60;
    w.provider.charge = () => Number.MAX_SAFE_INTEGER; // 9 billion TRX
    const a = await deposit(w, 0, USDT(20));
    expect(await settle(w, p)).toBe(true);
    const [r] = (await rentals(w)).filter((x) => x.receiver === a);
    expect(w.provider.orders).toHaveLength(1);
    const costs = await transferCosts(w.database.db, new Date(0));
    const collection = costs.find((c) => c.purpose === "collection")!;
    // SAFE: the overcharge is flagged and the books never hold more than energy × cap.
    const alerted = w.logs.some(
      (l) =>
        typeof l.alert === "string" && /rental/.test(String(l.alert)) && l.alert !== "energy_rental_unknown",
    );
    const bound = BigInt(r!.energy) * 80n;
    expect(
      { paid: r!.paid_sun, collectionRental: collection.rental.toString(), alerted },
      `rental ${r!.status}; cap×energy = ${bound}`,
    ).toEqual({
      paid: expect.toSatisfy((v: string | null) => v === null || BigInt(v) <= bound),
      collectionRental: expect.toSatisfy((v: string) => BigInt(v) <= bound),
      alerted: true,
    });
  }, 180_000);
});
