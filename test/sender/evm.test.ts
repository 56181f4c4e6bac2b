import { encodeFunctionData, type Hex, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import type { Database } from "../../src/db/database.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
// Intents with the evidence the signer checks (issue #34): a backing transaction and its hold.
import { requestTransfer } from "../support/backed-transfer.js";
import {
  ANVIL_DEPLOYER_KEY,
  type AnvilNode,
  deployTestUsdt,
  mintTestUsdt,
  startAnvil,
  TEST_USDT,
  transferTestUsdt,
} from "../support/chain/anvil.js";
import { openTestDatabase } from "../support/db.js";
import { makeSender, recordingOutcomes, USDT, wallet } from "./support.js";

const ERC20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
const hot = wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;
const deployer = privateKeyToAccount(ANVIL_DEPLOYER_KEY).address;
const recipient = (i: number) => `0x${(0xabc000 + i).toString(16).padStart(40, "0")}` as Hex;

let node: AnvilNode;
let token: Hex;
let writer: EvmChainWriter;
let database: Database;

beforeAll(async () => {
  [node, database] = await Promise.all([startAnvil(), openTestDatabase()]);
  token = await deployTestUsdt(node);
  writer = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
});

afterAll(async () => {
  await database?.close();
  await node?.stop();
});

describe("EvmChainWriter: the endpoint's chain id (issue #37)", () => {
  it("a writer expecting chain 1 refuses an endpoint of another chain before building anything; without the expectation it builds", async () => {
    const spec = {
      asset: "token" as const,
      environment: "production" as const,
      from: hot,
      fromIndex: HOT_WALLET_INDEX,
      to: recipient(1),
      amount: 1n,
    };
    await mintTestUsdt(node, token, hot, USDT(1));
    const strict = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token, expectedChainId: 1 });
    await expect(strict.prepare(spec, { nonce: 0 })).rejects.toThrow(
      /USDT-ERC20: the endpoint answers chain id 31337, not 1/,
    );
    const built = await writer.prepare(spec, { nonce: 0 });
    expect(built.signRequest).toMatchObject({ chain: "evm", transaction: { chainId: 31337 } });
  });
});

describe("EvmChainWriter: on-chain verification (docs/decisions/sending.md#chains-part-2-sending-money-issue-6)", () => {
  it("a transfer with the expected Transfer log succeeds; wrong amount, wrong recipient, revert and no receipt do not", async () => {
    await mintTestUsdt(node, token, deployer, USDT(100));
    const r = await transferTestUsdt(node, token, ANVIL_DEPLOYER_KEY, recipient(1), USDT(3));
    const ok = await writer.check(r.transactionHash, {
      asset: "token",
      from: deployer,
      to: recipient(1),
      amount: USDT(3),
    });
    expect(ok).toMatchObject({ state: "success", blockNumber: Number(r.blockNumber), confirmations: 1 });

    expect(
      await writer.check(r.transactionHash, {
        asset: "token",
        from: deployer,
        to: recipient(1),
        amount: USDT(3) + 1n,
      }),
    ).toMatchObject({
      state: "failed",
      reason: expect.stringMatching(/expected recipient and amount/),
    });
    expect(
      await writer.check(r.transactionHash, {
        asset: "token",
        from: deployer,
        to: recipient(2),
        amount: USDT(3),
      }),
    ).toMatchObject({
      state: "failed",
    });

    // Reverted on-chain: more than the balance, with an explicit gas limit so that it is mined.
    const poor = privateKeyToAccount(`0x${"11".repeat(32)}`);
    await node.testClient.setBalance({ address: poor.address, value: 10n ** 18n });
    const { createWalletClient, http } = await import("viem");
    const { foundry } = await import("viem/chains");
    const client = createWalletClient({ account: poor, chain: foundry, transport: http(node.rpcUrl) });
    const hash = await client.sendTransaction({
      to: token,
      data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [recipient(3), 5n] }),
      gas: 100_000n,
    });
    const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("reverted");
    expect(
      await writer.check(hash, { asset: "token", from: poor.address, to: recipient(3), amount: 5n }),
    ).toMatchObject({
      state: "failed",
      reason: "reverted",
    });

    // A hash the chain never saw: no receipt, not a success.
    expect(
      await writer.check(`0x${"ab".repeat(32)}`, {
        asset: "token",
        from: deployer,
        to: recipient(1),
        amount: 1n,
      }),
    ).toEqual({
      state: "missing",
    });
    expect(TEST_USDT.abi.length).toBeGreaterThan(0);
  });
});

describe("Sender on anvil", () => {
  it("signs, broadcasts and confirms a withdrawal: one Transfer on-chain, one outcome, nonce from the database", async () => {
    await mintTestUsdt(node, token, hot, USDT(50));
    await node.testClient.setBalance({ address: hot, value: 10n ** 18n });
    const { outcomes, calls } = recordingOutcomes();
    const sender = makeSender({ db: database.db, network: "USDT-ERC20", writer, outcomes });
    await database.db.transaction().execute(async (trx) => {
      await requestTransfer(trx, {
        intentId: "tx_w1",
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: recipient(10),
        amount: USDT(7.5),
      });
      // Idempotent on the intent id.
      await requestTransfer(trx, {
        intentId: "tx_w1",
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: recipient(10),
        amount: USDT(7.5),
      });
      await requestTransfer(trx, {
        intentId: "tx_p1",
        kind: "payout",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: recipient(11),
        amount: USDT(1),
      });
    });
    expect(await sender.drain(20_000)).toBe(0);
    expect(calls.map((c) => [c.intentId, c.status]).sort()).toEqual([
      ["tx_p1", "confirmed"],
      ["tx_w1", "confirmed"],
    ]);
    const rows = await database.db.selectFrom("outgoing_transfers").selectAll().orderBy("nonce").execute();
    expect(rows.map((r) => Number(r.nonce))).toEqual([0, 1]);
    for (const r of rows) {
      const receipt = await node.publicClient.getTransactionReceipt({ hash: r.tx_hash as Hex });
      expect(receipt.status).toBe("success");
      expect(receipt.from.toLowerCase()).toBe(hot.toLowerCase());
    }
    expect(await writer.tokenBalance(recipient(10))).toBe(USDT(7.5));
    const nonceRow = await database.db.selectFrom("sender_nonces").selectAll().executeTakeFirstOrThrow();
    expect(Number(nonceRow.next_nonce)).toBe(2);
    // Fees come from the network with the 10 % buffer.
    const attempt = await database.db
      .selectFrom("outgoing_transfer_attempts")
      .selectAll()
      .where("intent_id", "=", "tx_w1")
      .executeTakeFirstOrThrow();
    const tx = await node.publicClient.getTransaction({ hash: attempt.tx_hash as Hex });
    expect(tx.maxFeePerGas).toBe(BigInt(attempt.fee.maxFeePerGas!));
    expect(tx.maxFeePerGas! > 0n).toBe(true);
  });

  it("a hot wallet too low leaves the transfer queued (not failed) with an alert, and sends it once funded", async () => {
    const { outcomes, calls } = recordingOutcomes();
    const sender = makeSender({ db: database.db, network: "USDT-ERC20", writer, outcomes });
    const balance = await writer.tokenBalance(hot);
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_big",
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: recipient(20),
        amount: balance + 1n,
      }),
    );
    await sender.tick();
    let row = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", "tx_big")
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("queued");
    expect(row.waiting_funds_since).not.toBeNull();
    expect(calls).toEqual([]);
    await mintTestUsdt(node, token, hot, 1n);
    await database.db
      .updateTable("outgoing_transfers")
      .set({ next_attempt_at: new Date() })
      .where("intent_id", "=", "tx_big")
      .execute();
    expect(await sender.drain(20_000)).toBe(0);
    row = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", "tx_big")
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("confirmed");
    expect(row.waiting_funds_since).toBeNull();
    expect(calls.map((c) => c.status)).toEqual(["confirmed"]);
  });

  it("a stuck transfer is replaced with higher fees at the same nonce; exactly one attempt is mined, one outcome", async () => {
    await mintTestUsdt(node, token, hot, USDT(10));
    const { outcomes, calls } = recordingOutcomes();
    const sender = makeSender({ db: database.db, network: "USDT-ERC20", writer, outcomes, stuckAfterMs: 0 });
    const all = await writer.tokenBalance(hot);
    await node.testClient.setAutomine(false);
    try {
      await database.db.transaction().execute((trx) =>
        requestTransfer(trx, {
          intentId: "tx_a",
          kind: "withdrawal",
          network: "USDT-ERC20",
          environment: "sandbox",
          to: recipient(30),
          amount: all - 1n,
        }),
      );
      await sender.tick(); // signed + broadcast, not mined
      const a = await database.db
        .selectFrom("outgoing_transfers")
        .selectAll()
        .where("intent_id", "=", "tx_a")
        .executeTakeFirstOrThrow();
      expect(a.status).toBe("broadcast");
      // Stuck (stuckAfterMs 0): the next round replaces it with higher fees at the same nonce.
      await sender.tick();
      const attempts = await database.db
        .selectFrom("outgoing_transfer_attempts")
        .selectAll()
        .where("intent_id", "=", "tx_a")
        .orderBy("seq")
        .execute();
      expect(attempts.length).toBeGreaterThanOrEqual(2);
      expect(BigInt(attempts[1]!.fee.maxFeePerGas!)).toBeGreaterThan(BigInt(attempts[0]!.fee.maxFeePerGas!));
      await node.testClient.mine({ blocks: 1 });
    } finally {
      await node.testClient.setAutomine(true);
    }
    expect(await sender.drain(20_000)).toBe(0);
    const a = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", "tx_a")
      .executeTakeFirstOrThrow();
    expect(a.status).toBe("confirmed");
    // Exactly one of the attempts was mined; the other can never be (same nonce).
    const attempts = await database.db
      .selectFrom("outgoing_transfer_attempts")
      .selectAll()
      .where("intent_id", "=", "tx_a")
      .execute();
    const mined = [];
    for (const at of attempts) {
      const r = await node.publicClient.getTransactionReceipt({ hash: at.tx_hash as Hex }).catch(() => null);
      if (r) mined.push(r);
    }
    expect(mined).toHaveLength(1);
    expect(mined[0]!.transactionHash).toBe(a.tx_hash);
    expect(await writer.tokenBalance(recipient(30))).toBe(all - 1n);
    expect(calls.map((c) => [c.intentId, c.status])).toEqual([["tx_a", "confirmed"]]);
  });

  it("a transfer that would revert is failed before anything is signed", async () => {
    const { outcomes, calls } = recordingOutcomes();
    const sender = makeSender({ db: database.db, network: "USDT-ERC20", writer, outcomes });
    await mintTestUsdt(node, token, hot, USDT(1));
    // TestUSDT refuses the zero address.
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_zero",
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: "0x0000000000000000000000000000000000000000",
        amount: 1n,
      }),
    );
    expect(await sender.drain(20_000)).toBe(0);
    expect(calls).toEqual([
      {
        intentId: "tx_zero",
        kind: "withdrawal",
        status: "failed",
        txHash: null,
        reason: expect.stringMatching(/revert/),
      },
    ]);
    expect(
      await database.db
        .selectFrom("outgoing_transfer_attempts")
        .selectAll()
        .where("intent_id", "=", "tx_zero")
        .execute(),
    ).toEqual([]);
  });

  it("a nonce used by another transaction (not ours) fails the intent without signing a second transfer", async () => {
    await mintTestUsdt(node, token, hot, USDT(2));
    const { outcomes, calls } = recordingOutcomes();
    // Signs and commits, then dies before broadcasting.
    const dead = new AbortController();
    const crashing = makeSender({
      db: database.db,
      network: "USDT-ERC20",
      writer,
      outcomes,
      // A dead process does nothing more: this tick stops too (the signed row is not broadcast).
      fault: (point) => {
        if (point !== "after-commit") return;
        dead.abort();
        throw new Error("crash after commit");
      },
    });
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_nonce",
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: recipient(40),
        amount: USDT(1),
      }),
    );
    await crashing.tick(dead.signal);
    const row = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", "tx_nonce")
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("signed");
    // Meanwhile someone else with the hot wallet's key uses that nonce (an operator's manual send).
    const { createWalletClient, http, bytesToHex } = await import("viem");
    const { foundry } = await import("viem/chains");
    const { PrivateKeyDeriver } = await import("../../src/wallet/private-key-deriver.js");
    const key = PrivateKeyDeriver.fromMnemonic(
      "test test test test test test test test test test test junk",
    ).privateKey("USDT-ERC20", "sandbox", HOT_WALLET_INDEX);
    const operator = createWalletClient({
      account: privateKeyToAccount(bytesToHex(key)),
      chain: foundry,
      transport: http(node.rpcUrl),
    });
    const other = await operator.sendTransaction({ to: recipient(41), value: 1n, nonce: Number(row.nonce) });
    await node.publicClient.waitForTransactionReceipt({ hash: other });

    const sender = makeSender({ db: database.db, network: "USDT-ERC20", writer, outcomes });
    expect(await sender.drain(20_000)).toBe(0);
    expect(calls).toEqual([
      {
        intentId: "tx_nonce",
        kind: "withdrawal",
        status: "failed",
        txHash: null,
        reason: "the nonce was used by another transaction",
      },
    ]);
    expect(await writer.tokenBalance(recipient(40))).toBe(0n);
    const attempts = await database.db
      .selectFrom("outgoing_transfer_attempts")
      .selectAll()
      .where("intent_id", "=", "tx_nonce")
      .execute();
    expect(attempts).toHaveLength(1);
  });
});
