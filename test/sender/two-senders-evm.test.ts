import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
// Intents with the evidence the signer checks (issue #34): a backing transaction and its hold.
import { requestTransfer } from "../support/backed-transfer.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { openTestDatabase } from "../support/db.js";
import { makeSender, recordingOutcomes, USDT, wallet } from "./support.js";

/**
 * Two workers' senders checking the same open Ethereum transfer (issue 25: read-then-act races).
 * On PostgreSQL each worker has a pool of its own on the same database, as two `worker` processes.
 */
const hot = wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;
const recipient = `0x${"abc1".padStart(40, "0")}` as Hex;

/** The real writer, with a hook run once at the next `minedNonce` call (the moment another worker acts). */
class HookedEvmWriter extends EvmChainWriter {
  beforeMinedNonce: (() => Promise<void>) | undefined;
  override async minedNonce(address: string): Promise<number> {
    const hook = this.beforeMinedNonce;
    this.beforeMinedNonce = undefined;
    if (hook) await hook();
    return super.minedNonce(address);
  }
}

let node: AnvilNode;
let token: Hex;
let first: Database & { url: string | undefined };
let second: Database;

beforeAll(async () => {
  [node, first] = await Promise.all([startAnvil(), openTestDatabase()]);
  second = first.url ? await openDatabase({ kind: "postgres", url: first.url, poolSize: 5 }) : first;
  token = await deployTestUsdt(node);
});
afterAll(async () => {
  if (second !== first) await second?.close();
  await first?.close();
  await node?.stop();
});

describe("two senders on one open Ethereum transfer", () => {
  it("a replacement mined while the other worker checks is found: the withdrawal confirms, not 'nonce used by another transaction'", async () => {
    await mintTestUsdt(node, token, hot, USDT(10));
    await node.testClient.setBalance({ address: hot, value: 10n ** 18n });
    const { outcomes, calls } = recordingOutcomes();
    const writerA = new HookedEvmWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
    const writerB = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
    // Worker A waits long before replacing; worker B replaces at once (stuck after 0 ms).
    const a = makeSender({ db: first.db, network: "USDT-ERC20", writer: writerA, outcomes });
    const b = makeSender({
      db: second.db,
      network: "USDT-ERC20",
      writer: writerB,
      outcomes,
      stuckAfterMs: 0,
    });
    await node.testClient.setAutomine(false);
    try {
      await first.db.transaction().execute((trx) =>
        requestTransfer(trx, {
          intentId: "tx_replaced_meanwhile",
          kind: "withdrawal",
          network: "USDT-ERC20",
          environment: "sandbox",
          to: recipient,
          amount: USDT(4),
        }),
      );
      await a.tick(); // signed and broadcast by A, not mined
      // While A checks the transfer, B replaces it (same nonce, higher fees) and the replacement is
      // mined: A's first attempt is then unknown to the node and the nonce is used, by our own
      // replacement, which A must see.
      writerA.beforeMinedNonce = async () => {
        await b.tick();
        const attempts = await first.db
          .selectFrom("outgoing_transfer_attempts")
          .select("seq")
          .where("intent_id", "=", "tx_replaced_meanwhile")
          .execute();
        expect(attempts).toHaveLength(2);
        await node.testClient.mine({ blocks: 1 });
      };
      await a.tick();
      expect(writerA.beforeMinedNonce).toBeUndefined();
    } finally {
      await node.testClient.setAutomine(true);
    }
    expect(await a.drain(20_000)).toBe(0);
    const row = await first.db
      .selectFrom("outgoing_transfers")
      .select(["status", "reason", "tx_hash"])
      .where("intent_id", "=", "tx_replaced_meanwhile")
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: "confirmed", reason: null });
    const second_ = await first.db
      .selectFrom("outgoing_transfer_attempts")
      .select("tx_hash")
      .where("intent_id", "=", "tx_replaced_meanwhile")
      .where("seq", "=", 2)
      .executeTakeFirstOrThrow();
    expect(row.tx_hash).toBe(second_.tx_hash);
    expect(await writerB.tokenBalance(recipient)).toBe(USDT(4));
    expect(calls.map((c) => [c.intentId, c.status])).toEqual([["tx_replaced_meanwhile", "confirmed"]]);
  }, 60_000);
});
