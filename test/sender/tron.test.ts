import { TronWeb } from "tronweb";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import { TransferWouldFailError, withBuffer } from "../../src/chains/writer.js";
import type { Database } from "../../src/db/database.js";
import { type Signer, SignerRejectedError } from "../../src/signer/index.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
// Intents with the evidence the signer checks (issue #34): a backing transaction and its hold.
import { requestTransfer } from "../support/backed-transfer.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { openTestDatabase } from "../support/db.js";
import { localSigner, makeSender, recordingOutcomes, USDT, wallet } from "./support.js";

const hot = wallet.address("USDT-TRC20", "sandbox", HOT_WALLET_INDEX);
const to = (i: number) => wallet.address("USDT-TRC20", "sandbox", 500 + i);

let node: AnvilNode;
let emulator: TronEmulator;
let writer: TronChainWriter;
let database: Database;

beforeAll(async () => {
  [node, database] = await Promise.all([startAnvil(), openTestDatabase()]);
  const token = await deployTestUsdt(node);
  emulator = await startTronEmulator(node, token);
  writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
  await mintTestUsdt(node, token, tronAddressToEvm(hot) as Hex, USDT(100));
});

afterAll(async () => {
  await emulator?.stop();
  await node?.stop();
  await database?.close();
});

describe("TRON write side on the emulator", () => {
  it("prices energy and bandwidth at the chain's parameters (getchainparameters), read again after their TTL", async () => {
    // The hot wallet has no account yet (no TRX): no staked energy, no free bandwidth. The node's
    // dry run reports what the transfer uses: 130,285 energy to an address holding no USDT (as on
    // mainnet), and the 350 bytes TRANSFER_BYTES assumes are burned at the bandwidth price, + 10 %.
    const cost = (energyPrice: bigint) => withBuffer(130_285n * energyPrice + 350n * 1_000n, 10);
    const fresh = new TronChainWriter({
      apiUrl: emulator.url,
      tokenAddress: emulator.tokenAddress,
      chainParametersTtlMs: 0,
    });
    const cached = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
    try {
      emulator.setChainParameters({ getEnergyFee: 210, getTransactionFee: 1_000 });
      expect(await fresh.tokenTransferCost(hot, to(9), 1n)).toBe(cost(210n));
      expect(await cached.tokenTransferCost(hot, to(9), 1n)).toBe(cost(210n));
      emulator.setChainParameters({ getEnergyFee: 100, getTransactionFee: 1_000 });
      expect(await fresh.tokenTransferCost(hot, to(9), 1n)).toBe(cost(100n));
      // Within its TTL (10 minutes by default) a writer keeps the prices it read.
      expect(await cached.tokenTransferCost(hot, to(9), 1n)).toBe(cost(210n));
      // A node that does not report the energy price: the configured one.
      emulator.setChainParameters({ getTransactionFee: 1_000 }, ["getEnergyFee"]);
      expect(await fresh.tokenTransferCost(hot, to(9), 1n)).toBe(cost(210n));
      const configured = new TronChainWriter({
        apiUrl: emulator.url,
        tokenAddress: emulator.tokenAddress,
        energyPriceSun: 420,
      });
      expect(await configured.tokenTransferCost(hot, to(9), 1n)).toBe(cost(420n));
    } finally {
      emulator.setChainParameters({ getEnergyFee: 210, getTransactionFee: 1_000 });
    }
  });

  it("a TRX transfer to an address without an account costs its creation: 1 TRX, and 0.1 TRX for bandwidth without stake", async () => {
    const native = (to: string) =>
      writer.prepare(
        {
          asset: "native",
          environment: "sandbox",
          from: hot,
          fromIndex: HOT_WALLET_INDEX,
          to,
          amount: 5_000_000n,
        },
        { nonce: null },
      );
    const tron = new TronWeb({ fullHost: emulator.url });
    const gasTank = wallet.address("USDT-TRC20", "sandbox", 7_000);
    await node.testClient.setBalance({ address: tronAddressToEvm(gasTank) as Hex, value: 10n ** 19n });
    // A new address: the amount plus both creation fees (the hot wallet stakes no bandwidth).
    expect(await tron.trx.getAccount(to(20))).toEqual({});
    expect((await native(to(20))).maxNativeCost).toBe(5_000_000n + 1_000_000n + 100_000n);
    // To an existing account (it holds TRX): the amount and the bandwidth, 300 bytes burned (the
    // hot wallet has no account yet, hence no free allowance).
    expect((await native(gasTank)).maxNativeCost).toBe(5_000_000n + 300_000n);
    // The parameters as the chain reports them (governance may change them).
    emulator.setChainParameters({ getCreateNewAccountFeeInSystemContract: 2_000_000 });
    const fresh = new TronChainWriter({
      apiUrl: emulator.url,
      tokenAddress: emulator.tokenAddress,
      chainParametersTtlMs: 0,
    });
    try {
      const prepared = await fresh.prepare(
        {
          asset: "native",
          environment: "sandbox",
          from: hot,
          fromIndex: HOT_WALLET_INDEX,
          to: to(20),
          amount: 1n,
        },
        { nonce: null },
      );
      expect(prepared.maxNativeCost).toBe(1n + 2_000_000n + 100_000n);
    } finally {
      emulator.setChainParameters({ getCreateNewAccountFeeInSystemContract: 1_000_000 });
    }
  });

  it("checks energy/bandwidth against the TRX balance before signing: an account without TRX waits (queued)", async () => {
    const { outcomes, calls } = recordingOutcomes();
    const sender = makeSender({ db: database.db, network: "USDT-TRC20", writer, outcomes });
    expect(await writer.nativeBalance(hot)).toBe(0n);
    // No energy in the emulator's account resources: the whole transfer energy is burnt in TRX.
    expect(await writer.tokenTransferCost(hot, to(0), 1n)).toBeGreaterThan(0n);
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_t0",
        kind: "withdrawal",
        network: "USDT-TRC20",
        environment: "sandbox",
        to: to(0),
        amount: USDT(2),
      }),
    );
    await sender.tick();
    const row = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", "tx_t0")
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("queued");
    expect(row.last_error).toMatch(/waiting for native funds/);
    expect(calls).toEqual([]);

    // Funded with TRX (emulator: 1 ETH on anvil = 1 TRX): signed by the signer, broadcast, verified.
    await node.testClient.setBalance({ address: tronAddressToEvm(hot), value: 10n ** 20n });
    await database.db
      .updateTable("outgoing_transfers")
      .set({ next_attempt_at: new Date(0) })
      .execute();
    expect(await sender.drain(20_000)).toBe(0);
    expect(calls).toMatchObject([{ intentId: "tx_t0", status: "confirmed", reason: null }]);
    expect(await writer.tokenBalance(to(0))).toBe(USDT(2));
    const attempt = await database.db
      .selectFrom("outgoing_transfer_attempts")
      .selectAll()
      .where("intent_id", "=", "tx_t0")
      .executeTakeFirstOrThrow();
    expect(attempt.expires_at).not.toBeNull();
    expect(attempt.tx_hash).toBe(calls[0]!.txHash);
  });

  it("verification: success with the expected log; wrong amount, reverted and unknown txIDs are not", async () => {
    const ok = (
      await database.db
        .selectFrom("outgoing_transfers")
        .select("tx_hash")
        .where("intent_id", "=", "tx_t0")
        .executeTakeFirstOrThrow()
    ).tx_hash!;
    expect(await writer.check(ok, { asset: "token", from: hot, to: to(0), amount: USDT(2) })).toMatchObject({
      state: "success",
    });
    expect(
      await writer.check(ok, { asset: "token", from: hot, to: to(0), amount: USDT(2) - 1n }),
    ).toMatchObject({ state: "failed" });
    expect(await writer.check(ok, { asset: "token", from: hot, to: to(1), amount: USDT(2) })).toMatchObject({
      state: "failed",
    });
    expect(await writer.check("ab".repeat(32), { asset: "token", from: hot, to: to(0), amount: 1n })).toEqual(
      { state: "missing" },
    );

    // Preparing a transfer beyond the balance: the node's dry run reverts, nothing is signed.
    await expect(
      writer.prepare(
        {
          asset: "token",
          environment: "sandbox",
          from: hot,
          fromIndex: HOT_WALLET_INDEX,
          to: to(2),
          amount: USDT(1_000_000),
        },
        { nonce: null },
      ),
    ).rejects.toBeInstanceOf(TransferWouldFailError);
    // Built by the node without a dry run, signed by the signer and broadcast: mined as FAILED (REVERT).
    const built = await new TronWeb({ fullHost: emulator.url }).transactionBuilder.triggerSmartContract(
      emulator.tokenAddress,
      "transfer(address,uint256)",
      { feeLimit: 100_000_000 },
      [
        { type: "address", value: to(2) },
        { type: "uint256", value: USDT(1_000_000).toString() },
      ],
      hot,
    );
    const t = built.transaction as unknown as {
      txID: string;
      raw_data: Record<string, unknown>;
      raw_data_hex: string;
    };
    // The signer signs it only for a recorded payout of that amount to that address (its policy).
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_tron_unchecked_revert",
        kind: "payout",
        network: "USDT-TRC20",
        environment: "sandbox",
        to: to(2),
        amount: USDT(1_000_000),
      }),
    );
    const signed = await localSigner(database.db, writer as unknown as { token?: unknown }).sign(
      {
        chain: "tron",
        network: "USDT-TRC20",
        environment: "sandbox",
        index: HOT_WALLET_INDEX,
        transaction: { txID: t.txID, raw_data: t.raw_data, raw_data_hex: t.raw_data_hex },
      },
      { intentId: "tx_tron_unchecked_revert" },
    );
    // Closed by hand: this test broadcasts it itself (no sender of a later test picks it up).
    await database.db
      .updateTable("outgoing_transfers")
      .set({ status: "failed", reason: "test: broadcast by hand", finished_at: new Date() })
      .where("intent_id", "=", "tx_tron_unchecked_revert")
      .execute();
    expect(await writer.broadcast(signed.raw)).toEqual({ accepted: true });
    // Broadcasting the same bytes again is harmless (the node knows them).
    expect(await writer.broadcast(signed.raw)).toEqual({ accepted: true });
    // The node mines it asynchronously (anvil may answer the send before its block exists): a
    // check right after the broadcast may still say pending, as on a real TRON node.
    await expect
      .poll(
        () => writer.check(signed.hash, { asset: "token", from: hot, to: to(2), amount: USDT(1_000_000) }),
        { timeout: 10_000, interval: 100 },
      )
      .toMatchObject({
        state: "failed",
        reason: expect.stringMatching(/REVERT|failed/),
      });
  });

  it("a transaction that expired unmined is provably dropped: a new one is signed, and exactly one transfer lands", async () => {
    const { outcomes, calls } = recordingOutcomes();
    // The first process signs and commits, then dies before broadcasting.
    const dead = new AbortController();
    const crashing = makeSender({
      db: database.db,
      network: "USDT-TRC20",
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
        intentId: "tx_t1",
        kind: "payout",
        network: "USDT-TRC20",
        environment: "sandbox",
        to: to(3),
        amount: USDT(3),
      }),
    );
    await crashing.tick(dead.signal);
    let row = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", "tx_t1")
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("signed");
    // Its bytes were lost on the way to the node and its expiration passed (simulated: the
    // emulator's expiration is a minute of real time).
    await database.db
      .updateTable("outgoing_transfers")
      .set({ status: "broadcast", next_attempt_at: new Date(0) })
      .where("intent_id", "=", "tx_t1")
      .execute();
    await database.db
      .updateTable("outgoing_transfer_attempts")
      .set({ expires_at: new Date(Date.now() - 120_000), broadcast_at: new Date() })
      .where("intent_id", "=", "tx_t1")
      .execute();
    const sender = makeSender({
      db: database.db,
      network: "USDT-TRC20",
      writer,
      outcomes,
      expiryGraceMs: 1_000,
    });
    expect(await sender.drain(20_000)).toBe(0);
    const attempts = await database.db
      .selectFrom("outgoing_transfer_attempts")
      .selectAll()
      .where("intent_id", "=", "tx_t1")
      .orderBy("seq")
      .execute();
    expect(attempts).toHaveLength(2);
    expect(
      await writer.check(attempts[0]!.tx_hash, { asset: "token", from: hot, to: to(3), amount: USDT(3) }),
    ).toEqual({ state: "missing" });
    row = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", "tx_t1")
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("confirmed");
    expect(row.tx_hash).toBe(attempts[1]!.tx_hash);
    expect(await writer.tokenBalance(to(3))).toBe(USDT(3));
    expect(calls).toMatchObject([{ intentId: "tx_t1", status: "confirmed" }]);
  });

  it("a transfer signed but never broadcast whose attempt expired is not sent: a new one is signed, and only that one lands", async () => {
    // Found by the 1,000-deposit bench: a sweep whose first broadcast failed (a loaded node) stayed
    // "signed", and every later try broadcast the same expired bytes, which every node refuses.
    const { outcomes, calls } = recordingOutcomes();
    const dead = new AbortController();
    const crashing = makeSender({
      db: database.db,
      network: "USDT-TRC20",
      writer,
      outcomes,
      fault: (point) => {
        if (point !== "after-commit") return;
        dead.abort();
        throw new Error("crash after commit");
      },
    });
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_expired_unsent",
        kind: "withdrawal",
        network: "USDT-TRC20",
        environment: "sandbox",
        to: to(20),
        amount: USDT(1),
      }),
    );
    // TRX for both attempts' fees (1 TRX = 10^18 wei on the emulator's anvil).
    await node.testClient.setBalance({ address: tronAddressToEvm(hot), value: 10n ** 24n });
    await crashing.tick(dead.signal);
    const status = async () =>
      await database.db
        .selectFrom("outgoing_transfers")
        .select(["status", "tx_hash"])
        .where("intent_id", "=", "tx_expired_unsent")
        .executeTakeFirstOrThrow();
    expect((await status()).status).toBe("signed");
    // Its expiration passed before anything sent it (as recorded; the emulator's own clock is real time).
    await database.db
      .updateTable("outgoing_transfer_attempts")
      .set({ expires_at: new Date(Date.now() - 120_000) })
      .where("intent_id", "=", "tx_expired_unsent")
      .execute();
    const sender = makeSender({
      db: database.db,
      network: "USDT-TRC20",
      writer,
      outcomes,
      expiryGraceMs: 1_000,
    });
    expect(await sender.drain(20_000)).toBe(0);
    const attempts = await database.db
      .selectFrom("outgoing_transfer_attempts")
      .select(["seq", "tx_hash"])
      .where("intent_id", "=", "tx_expired_unsent")
      .orderBy("seq")
      .execute();
    expect(attempts).toHaveLength(2);
    // The expired bytes never reached the chain; the new attempt is the one mined.
    expect(
      await writer.check(attempts[0]!.tx_hash, { asset: "token", from: hot, to: to(20), amount: USDT(1) }),
    ).toEqual({ state: "missing" });
    expect(await status()).toEqual({ status: "confirmed", tx_hash: attempts[1]!.tx_hash });
    expect(await writer.tokenBalance(to(20))).toBe(USDT(1));
    expect(calls).toMatchObject([{ intentId: "tx_expired_unsent", status: "confirmed" }]);
  });

  it("the signer refusing one intent of a batch holds up that one only; the others are signed in the next round", async () => {
    const { outcomes, calls } = recordingOutcomes();
    const inner = localSigner(database.db, writer as unknown as { token?: unknown });
    const asked: string[] = [];
    // A signer whose policy refuses one intent (in the cluster fault test of issue #38: a second
    // delegation to the hot wallet), signing the others as usual.
    const refusing: Signer = {
      sign: (request, context) => {
        asked.push(context?.intentId ?? "?");
        return context?.intentId === "tx_refused"
          ? Promise.reject(new SignerRejectedError("policy: refused by this test"))
          : inner.sign(request, context);
      },
    };
    const sender = makeSender({ db: database.db, network: "USDT-TRC20", writer, outcomes, signer: refusing });
    // TRX for the three transfers' fees at once (1 TRX = 10^18 wei on the emulator's anvil).
    await node.testClient.setBalance({ address: tronAddressToEvm(hot), value: 10n ** 24n });
    await database.db.transaction().execute(async (trx) => {
      for (const [intentId, i] of [
        ["tx_refused", 10],
        ["tx_kept_1", 11],
        ["tx_kept_2", 12],
      ] as const)
        await requestTransfer(trx, {
          intentId,
          kind: "withdrawal",
          network: "USDT-TRC20",
          environment: "sandbox",
          to: to(i),
          amount: USDT(1),
        });
    });
    const row = (id: string) =>
      database.db
        .selectFrom("outgoing_transfers")
        .select(["status", "errors", "last_error", "next_attempt_at"])
        .where("intent_id", "=", id)
        .executeTakeFirstOrThrow();
    // Round one: the batch of three is refused as a whole (nothing signed: one database
    // transaction), and only the refused intent backs off.
    await sender.tick();
    expect(new Set(asked)).toEqual(new Set(["tx_refused", "tx_kept_1", "tx_kept_2"]));
    expect(await row("tx_refused")).toMatchObject({
      status: "queued",
      errors: 1,
      last_error: /refused by this test/,
    });
    for (const id of ["tx_kept_1", "tx_kept_2"])
      expect(await row(id)).toMatchObject({ status: "queued", errors: 0 });
    // The next rounds: the two others are signed and paid; the refused one stays queued.
    expect(await sender.drain(8_000)).toBe(1);
    for (const id of ["tx_kept_1", "tx_kept_2"]) expect(await row(id)).toMatchObject({ status: "confirmed" });
    expect(await writer.tokenBalance(to(11))).toBe(USDT(1));
    expect(await writer.tokenBalance(to(12))).toBe(USDT(1));
    expect(await writer.tokenBalance(to(10))).toBe(0n);
    expect((await row("tx_refused")).status).toBe("queued");
    expect(calls.map((c) => c.intentId).sort()).toEqual(["tx_kept_1", "tx_kept_2"]);
    await database.db.deleteFrom("outgoing_transfers").where("intent_id", "=", "tx_refused").execute();
  });
});
