import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../../src/chains/tron/address.js";
import { USDT } from "../../sender/support.js";
import { deposit, gasTank, parts, rentals, settle, startWorld, TRX, transfers, type World } from "./setup.js";

// Attack / fault: the rental's wait (TRC20_RENTAL_WAIT_SECONDS, 600 s) is counted from when the sweep
// was planned (`created_at`), not from the order. When the activation top-up takes longer than that
// (the gas tank ran dry and the operator refilled it 11 minutes later; a congested node), the engine
// still orders — the provider is paid — and the very next sender round finds the rental "past its
// wait" before the provider's delegation (a few seconds on mainnet) shows: `expired`, the alert
// `energy_rental_not_delivered`, the sweep failed and planned again to burn. Paid twice: rental + burn.
// Now refused: the wait counts from the order (`ordered_at`).

let w: World;
beforeAll(async () => {
  w = await startWorld();
}, 120_000);
afterAll(async () => {
  await w?.stop();
});

const WEI_PER_SUN = 10n ** 12n;

describe("attack: the activation outlives the rental's wait", () => {
  it("an order placed is given its full wait (or no order is placed for a rental already past it)", async () => {
    const p = parts(w);
    const tank = tronAddressToEvm(gasTank) as Hex;
    await w.node.testClient.setBalance({ address: tank, value: 0n }); // the gas tank ran dry
    const a = await deposit(w, 0, USDT(20));
    expect(await p.sweeper.tick()).toBe(1);
    for (let i = 0; i < 5; i++) {
      await p.engine.tick();
      await p.sender.tick();
      w.advance(5_000);
    }
    const [topUp] = (await transfers(w, "gas_topup")).filter((t) => t.to_address === a);
    expect(topUp!.status).toBe("queued"); // waits for funds
    // 11 minutes later the operator refills the gas tank.
    w.advance(660_000);
    await w.node.testClient.setBalance({ address: tank, value: TRX(1_000) * WEI_PER_SUN });
    for (let i = 0; i < 20; i++) {
      await p.sender.tick();
      if (
        (await transfers(w, "gas_topup")).find((t) => t.intent_id === topUp!.intent_id)!.status ===
        "confirmed"
      )
        break;
      w.advance(3_000);
      await new Promise((r) => setTimeout(r, 50));
    }
    // The provider delegates a few seconds after the order (a block or two), as on mainnet.
    w.provider.delivery = "later";
    await p.engine.tick(); // orders
    await p.sender.tick(); // the sweep's gate
    w.provider.deliverPending();
    await settle(w, p);
    const mine = (await rentals(w)).filter((r) => r.receiver === a);
    const sweeps = (await transfers(w, "sweep")).filter((s) => Number(s.from_index) === 100);
    const alerted = w.logs.some((l) => l.alert === "energy_rental_not_delivered");
    expect(
      {
        orders: w.provider.orders.length,
        statuses: mine.map((r) => r.status),
        sweeps: sweeps.map((s) => s.status),
        alerted,
      },
      `sweep reasons: ${sweeps.map((s) => s.reason)}`,
    ).toSatisfy(
      (x: { orders: number; statuses: string[]; alerted: boolean }) =>
        (x.orders === 0 || !x.statuses.includes("expired")) && !x.alerted,
    );
  }, 240_000);
});
