import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedChain } from "../../src/chains/simulator/simulated-chain.js";
import { SimulatorChainWriter } from "../../src/chains/simulator/simulator-writer.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { TEST_FAILURE_ADDRESSES } from "../../src/domain/currency.js";
import { requestTransfer } from "../../src/sender/intents.js";
import { FIRST_DEPOSIT_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { makeSender, recordingOutcomes, USDT, wallet } from "../sender/support.js";
import { openTestDatabase } from "../support/db.js";

/**
 * Two workers sending from the one sandbox hot wallet at once (issue 25: "insufficient balance"
 * failures of ordinary withdrawals). Each worker is what `senderJobs` builds per process: its own
 * SimulatedChain, SimulatorChainWriter and Sender. On PostgreSQL each has a pool of its own on the
 * same database, so their transactions really overlap, as two `worker` processes' do. On PGlite
 * both share the single connection, which runs one transaction at a time: the race cannot happen
 * there and the test passes with or without the lock; it still checks the bookkeeping.
 */
let first: Database & { url: string | undefined };
let second: Database;
beforeAll(async () => {
  first = await openTestDatabase();
  second = first.url ? await openDatabase({ kind: "postgres", url: first.url, poolSize: 5 }) : first;
});
afterAll(async () => {
  if (second !== first) await second?.close();
  await first?.close();
});

for (const network of ["USDT-ERC20", "USDT-TRC20"] as const) {
  describe(`two workers sending from one sandbox hot wallet (${network})`, () => {
    const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX);
    const recipient = (i: number) => wallet.address(network, "sandbox", FIRST_DEPOSIT_INDEX + 10_000 + i);

    it("every ordinary withdrawal confirms: no transfer is mined failed for a balance read before the lock", async () => {
      const { outcomes, calls } = recordingOutcomes();
      const worker = (database: Database) => {
        const chain = new SimulatedChain(database.db, { network });
        const writer = new SimulatorChainWriter(chain, { hotWallet: hot });
        return { chain, sender: makeSender({ db: database.db, network, writer, outcomes }) };
      };
      const a = worker(first);
      const b = worker(second);
      // A failure-address withdrawal leaves its faucet top-up in the hot wallet (the transfer is
      // mined failed, nothing leaves): the hot wallet holds a balance near the withdrawal amounts,
      // the state in which a balance read before another worker's transfer commits is too high.
      const ordinary: { id: string; to: string; amount: bigint }[] = [];
      const failing: string[] = [];
      await first.db.transaction().execute(async (trx) => {
        for (let i = 0; i < 60; i++) {
          const id = `tx_race_${network}_${i}`;
          const toFailure = i % 3 === 2;
          const to = toFailure ? TEST_FAILURE_ADDRESSES[network] : recipient(i);
          const amount = USDT(5 + (i % 4));
          await requestTransfer(trx, {
            intentId: id,
            kind: "withdrawal",
            network,
            environment: "sandbox",
            to,
            amount,
          });
          if (toFailure) failing.push(id);
          else ordinary.push({ id, to, amount });
        }
      });
      expect(ordinary).toHaveLength(40);

      const left = await Promise.all([a.sender.drain(60_000, 0), b.sender.drain(60_000, 0)]);
      expect(left).toEqual([0, 0]);

      const rows = await first.db
        .selectFrom("outgoing_transfers")
        .select(["intent_id", "status", "reason", "tx_hash"])
        .where("network", "=", network)
        .where("intent_id", "like", `tx_race_${network}_%`)
        .execute();
      const byId = new Map(rows.map((r) => [r.intent_id, r]));
      const notConfirmed = ordinary
        .map((o) => byId.get(o.id))
        .filter((r) => r?.status !== "confirmed")
        .map((r) => `${r?.intent_id}: ${r?.status} (${r?.reason})`);
      expect(notConfirmed).toEqual([]);
      for (const id of failing)
        expect(byId.get(id)).toMatchObject({ status: "failed", reason: "test failure address" });
      // One outcome per intent, whichever worker finished it.
      expect(calls.filter((c) => c.intentId.startsWith(`tx_race_${network}_`))).toHaveLength(60);

      // On the chain: the only failed transactions are the ones to the failure address.
      const failedTxs = await first.db
        .selectFrom("sim_transactions")
        .select(["to_address", "failure_reason"])
        .where("network", "=", network)
        .where("environment", "=", "sandbox")
        .where("status", "=", "failed")
        .execute();
      expect(failedTxs.filter((t) => t.failure_reason !== "test failure address")).toEqual([]);
      expect(failedTxs).toHaveLength(failing.length);

      // Balances add up: every recipient got its amount, and the hot wallet holds what the faucet
      // gave it minus what it sent (never below zero).
      for (const o of ordinary) expect(await a.chain.balanceOf(o.to)).toBe(o.amount);
      const sent = ordinary.reduce((s, o) => s + o.amount, 0n);
      const funded = await first.db
        .selectFrom("sim_transactions")
        .select(sql<string>`coalesce(sum(amount), 0)`.as("sum"))
        .where("network", "=", network)
        .where("environment", "=", "sandbox")
        .where("status", "=", "success")
        .where("from_address", "=", a.chain.faucetAddress)
        .where("to_address", "=", hot)
        .executeTakeFirstOrThrow();
      const hotBalance = await b.chain.balanceOf(hot);
      expect(hotBalance).toBe(BigInt(funded.sum) - sent);
      expect(hotBalance).toBeGreaterThanOrEqual(0n);
    });
  });
}
