import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { transferCosts } from "../../../src/sender/index.js";
import { USDT } from "../../sender/support.js";
import { deposit, parts, rentals, settle, startWorld, transfers, type World } from "./setup.js";

// Attack (slow provider / ordinary race between the engine's round and the sender's): the provider
// delegates first and answers the POST a little later. Meanwhile another worker's sender gate sees
// the energy on chain and settles the rental `delivered` straight from `ordering`; the engine's
// `markRentalOrdered` (WHERE status = 'ordering') then updates nothing: what the provider charged,
// its serial and name never reach the books. A provider that always answers after delivering makes
// every rental free in `stablegate chain costs`, with no alert.
// Now refused: the provider's answer is recorded whatever the rental's status by then.

let w: World;
beforeAll(async () => {
  w = await startWorld();
}, 120_000);
afterAll(async () => {
  await w?.stop();
});

describe("attack: energy shows on chain before the provider answers the order", () => {
  it("what the provider charged is still recorded (paid_sun, serial) and in the collection costs", async () => {
    const p = parts(w);
    const other = parts(w); // a second worker
    const a = await deposit(w, 0, USDT(20));
    w.provider.delivery = "sync";
    w.provider.beforeAnswer = async () => {
      await other.sender.tick();
    };
    expect(await settle(w, p)).toBe(true);
    const [r] = (await rentals(w)).filter((x) => x.receiver === a);
    const [sweep] = (await transfers(w, "sweep")).filter((s) => Number(s.from_index) === 100);
    expect(sweep!.status).toBe("confirmed");
    expect(w.provider.orders).toHaveLength(1);
    const charged = String(w.provider.orders[0]!.amount);
    const collection = (await transferCosts(w.database.db, new Date(0))).find(
      (c) => c.purpose === "collection",
    )!;
    expect({
      status: r!.status,
      paid: r!.paid_sun,
      serial: r!.serial,
      booked: collection.rental.toString(),
    }).toEqual({
      status: "delivered",
      paid: charged,
      serial: "hostile1",
      booked: charged,
    });
  }, 180_000);
});
