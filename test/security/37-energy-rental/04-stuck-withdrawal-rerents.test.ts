import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Signer, SignerRejectedError } from "../../../src/signer/protocol.js";
import { localSigner, USDT } from "../../sender/support.js";
import { requestTransfer } from "../../support/backed-transfer.js";
import {
  address,
  environment,
  hot,
  network,
  parts,
  rentals,
  startWorld,
  transfers,
  type World,
} from "./setup.js";

// Attack (drain the prepaid balance): a hot-wallet withdrawal the signer keeps refusing (its outflow
// cap reached by a merchant's withdrawals, say — decision 10: "a sweep or payment the signer refuses
// stays open for ever") keeps the hot wallet's batch queued. Each time the rented energy leaves at
// the end of the provider's 1-hour term, the gate finds the batch short again and orders another
// rental: `delivered` rentals never count as failures, so nothing bounds it. One stuck withdrawal
// costs a rental (~8.6 TRX at 60 sun for 143k energy) every hour, for ever, with no alert.
// Now refused: a hot-wallet rental serves the batch's oldest transfer; one still queued after its
// rental gets no other (it burns, or here stays refused by the signer, at no cost).

let w: World;
beforeAll(async () => {
  w = await startWorld();
}, 120_000);
afterAll(async () => {
  await w?.stop();
});

describe("attack: one withdrawal the signer refuses, many hours", () => {
  it("is rented energy at most once (not once per provider term)", async () => {
    const inner = localSigner(w.database.db, w.emulator.tokenAddress);
    const signer: Signer = {
      sign: async (req, ctx) => {
        if (ctx?.intentId === "tx_stuck") throw new SignerRejectedError("outflow cap reached (simulated)");
        return inner.sign(req, ctx);
      },
    };
    const p = parts(w, { signer });
    await w.database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_stuck",
        kind: "withdrawal",
        network,
        environment,
        to: address(901),
        amount: USDT(5),
      }),
    );
    const hours = 5;
    for (let h = 0; h < hours; h++) {
      for (let i = 0; i < 8; i++) {
        await p.engine.tick();
        await p.sender.tick();
        w.advance(5_000);
        await new Promise((r) => setTimeout(r, 30));
      }
      w.advance(3_600_000);
      w.endTerms(); // the provider's 1-hour delegation ends
    }
    const [stuck] = (await transfers(w, "withdrawal")).filter((t) => t.intent_id === "tx_stuck");
    const mine = (await rentals(w)).filter((r) => r.receiver === hot);
    const paid = mine.reduce((s, r) => s + BigInt(r.paid_sun ?? 0), 0n);
    expect(
      w.provider.orders.length,
      `withdrawal ${stuck!.status} (${stuck!.last_error}); rentals ${mine.map((r) => r.status)}; paid ${paid} sun over ${hours} h`,
    ).toBeLessThanOrEqual(1);
  }, 300_000);
});
