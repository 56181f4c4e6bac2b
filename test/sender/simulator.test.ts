import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedChain } from "../../src/chains/simulator/simulated-chain.js";
import { SimulatorChainWriter } from "../../src/chains/simulator/simulator-writer.js";
import type { Database } from "../../src/db/database.js";
import { TEST_FAILURE_ADDRESSES } from "../../src/domain/currency.js";
import { requestTransfer } from "../../src/sender/intents.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";
import { makeSender, recordingOutcomes, USDT, wallet } from "./support.js";

let database: Database;
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

for (const network of ["USDT-TRC20", "USDT-ERC20"] as const) {
  describe(`sandbox simulator sending (${network})`, () => {
    const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX);
    const to =
      network === "USDT-TRC20"
        ? "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6"
        : "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

    it("sends from the hot wallet (funded by the faucet on demand), verifies on-chain, one outcome per intent", async () => {
      const chain = new SimulatedChain(database.db, { network });
      const writer = new SimulatorChainWriter(chain, { hotWallet: hot });
      const { outcomes, calls } = recordingOutcomes();
      const sender = makeSender({ db: database.db, network, writer, outcomes });
      await database.db.transaction().execute(async (trx) => {
        await requestTransfer(trx, {
          intentId: `tx_ok_${network}`,
          kind: "withdrawal",
          network,
          environment: "sandbox",
          to,
          amount: USDT(12.5),
        });
        await requestTransfer(trx, {
          intentId: `tx_fail_${network}`,
          kind: "payout",
          network,
          environment: "sandbox",
          to: TEST_FAILURE_ADDRESSES[network],
          amount: USDT(1),
        });
      });
      await sender.tick();
      await sender.tick();
      expect(await sender.openCount()).toBe(0);
      const byId = Object.fromEntries(calls.map((c) => [c.intentId, c]));
      expect(calls).toHaveLength(2);
      expect(byId[`tx_ok_${network}`]).toMatchObject({ status: "confirmed", reason: null });
      expect(byId[`tx_fail_${network}`]).toMatchObject({ status: "failed", reason: "test failure address" });
      // Both are real transactions of the simulated chain, the failed one mined as failed.
      const okTx = await chain.transaction(byId[`tx_ok_${network}`]!.txHash!);
      expect(okTx).toMatchObject({ status: "success", from: hot, to, amount: USDT(12.5) });
      const failTx = await chain.transaction(byId[`tx_fail_${network}`]!.txHash!);
      expect(failTx?.status).toBe("failed");
      expect(await chain.balanceOf(to)).toBe(USDT(12.5));
      // Another round finds nothing to do and calls no hook again.
      await sender.tick();
      expect(calls).toHaveLength(2);
    });

    it("a crash before the recording transaction commits leaves no on-chain transfer", async () => {
      const chain = new SimulatedChain(database.db, { network });
      const writer = new SimulatorChainWriter(chain, { hotWallet: hot });
      const { outcomes, calls } = recordingOutcomes();
      const head = await chain.head();
      const crashing = makeSender({
        db: database.db,
        network,
        writer,
        outcomes,
        fault: (point) => {
          if (point === "before-commit") throw new Error("crash");
        },
      });
      await database.db.transaction().execute((trx) =>
        requestTransfer(trx, {
          intentId: `tx_crash_${network}`,
          kind: "withdrawal",
          network,
          environment: "sandbox",
          to,
          amount: 5n,
        }),
      );
      await crashing.tick();
      expect(await chain.head()).toBe(head); // rolled back with the record
      const sender = makeSender({ db: database.db, network, writer, outcomes });
      await database.db
        .updateTable("outgoing_transfers")
        .set({ next_attempt_at: new Date(0) })
        .execute();
      await sender.tick();
      expect(calls.map((c) => [c.intentId, c.status])).toEqual([[`tx_crash_${network}`, "confirmed"]]);
      expect(await chain.head()).toBeGreaterThan(head);
    });
  });
}
