import { sql } from "kysely";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import { SimulatedChain } from "../../src/chains/simulator/simulated-chain.js";
import { SimulatorChainWriter } from "../../src/chains/simulator/simulator-writer.js";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import type { Database, Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { systemClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { logger, makeSender, USDT, wallet } from "../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator } from "../support/chain/tron-emulator.js";
import { confirmedDeposit as confirmedDepositIn } from "../support/confirmed-deposit.js";
import { openTestDatabase } from "../support/db.js";

const DEPOSITS = 20;
let node: AnvilNode;
let token: Hex;
let database: Database;
let merchantId: string;

beforeAll(async () => {
  node = await startAnvil();
  token = await deployTestUsdt(node);
});

afterAll(async () => {
  await node?.stop();
});

/**
 * Each describe gets a database of its own: the tests count on the first deposit indexes of a
 * (network, environment) sequence (the sandbox TRC20 one is used by two of them).
 */
function useOwnDatabase() {
  beforeAll(async () => {
    database = await openTestDatabase();
    merchantId = (
      await createMerchantWithKeys(database.db, { email: "sweep@example.com", companyName: "Sweep Co" })
    ).id;
  });
  afterAll(async () => {
    await database?.close();
  });
}

/** A confirmed deposit of this file's merchant (test/support/confirmed-deposit.ts). */
async function confirmedDeposit(db: Db, network: CurrencyType, i: number, amount: bigint, txHash: string) {
  return db.transaction().execute(async (trx) => {
    const { address, credit } = await confirmedDepositIn(trx, {
      deriver: wallet,
      merchantId,
      network,
      i,
      amount,
      txHash,
    });
    expect(credit.status).toBe("posted");
    return address;
  });
}

async function ledgerSnapshot(db: Db) {
  const entries = await sql<{
    n: string;
    total: string | null;
  }>`select count(*)::text as n, sum(amount)::text as total from ledger_entries`.execute(db);
  const accounts = await sql<{
    id: string;
    balance: string;
  }>`select id::text, balance::text from ledger_accounts order by id`.execute(db);
  return { entries: entries.rows[0], accounts: accounts.rows };
}

describe("sweeping on anvil (ERC20)", () => {
  useOwnDatabase();
  it(`${DEPOSITS} deposits on ${DEPOSITS} addresses end in the hot wallet, the gas tank pays the gas, the ledger is unchanged`, async () => {
    const network = "USDT-ERC20";
    const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX) as Hex;
    const gasTank = wallet.address(network, "sandbox", GAS_TANK_INDEX) as Hex;
    await node.testClient.setBalance({ address: gasTank, value: 10n ** 18n });
    const writer = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
    const addresses: Hex[] = [];
    let total = 0n;
    for (let i = 0; i < DEPOSITS; i++) {
      const amount = USDT(60 + i);
      const receipt = await mintTestUsdt(
        node,
        token,
        wallet.address(network, "sandbox", 100 + i) as Hex,
        amount,
      );
      const address = (await confirmedDeposit(
        database.db,
        network,
        i,
        amount,
        receipt.transactionHash,
      )) as Hex;
      expect(receipt.logs.length).toBe(1);
      addresses.push(address);
      total += amount;
    }
    // One more address below the threshold (50 USDT): left alone.
    const small = (await confirmedDeposit(database.db, network, 99, USDT(5), `0x${"ee".repeat(32)}`)) as Hex;
    await mintTestUsdt(node, token, small, USDT(5));
    for (const a of addresses) expect(await writer.nativeBalance(a)).toBe(0n);
    const before = await ledgerSnapshot(database.db);
    const tankBefore = await writer.nativeBalance(gasTank);

    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    const sweeper = new Sweeper({
      db: database.db,
      network,
      environment: "sandbox",
      writer,
      address: (i) => wallet.address(network, "sandbox", i),
      threshold: USDT(50),
      logger,
      clock: systemClock,
    });
    const sender = makeSender({ db: database.db, network, writer, outcomes });
    expect(await sweeper.tick()).toBe(DEPOSITS);
    // Looked at once: nothing new to sweep while the sweeps are open or after.
    expect(await sweeper.tick()).toBe(0);
    const open = await sender.drain(60_000);
    if (open > 0)
      console.log(
        await database.db
          .selectFrom("outgoing_transfers")
          .select(["kind", "status", "last_error", "amount"])
          .where("status", "!=", "confirmed")
          .limit(3)
          .execute(),
      );
    expect(open).toBe(0);

    const rows = await database.db.selectFrom("outgoing_transfers").selectAll().execute();
    const sweeps = rows.filter((r) => r.kind === "sweep");
    const topUps = rows.filter((r) => r.kind === "gas_topup");
    expect(sweeps).toHaveLength(DEPOSITS);
    expect(topUps).toHaveLength(DEPOSITS);
    expect(rows.every((r) => r.status === "confirmed")).toBe(true);
    for (const s of sweeps)
      expect(topUps.some((t) => t.intent_id === s.after_intent_id && t.to_address === s.from_address)).toBe(
        true,
      );

    expect(await writer.tokenBalance(hot)).toBe(total);
    for (const a of addresses) {
      expect(await writer.tokenBalance(a)).toBe(0n);
      // Just enough ETH: what the top-up sent minus what the sweep burnt is a small remainder.
      const left = await writer.nativeBalance(a);
      const topUp = BigInt(topUps.find((t) => t.to_address === a)!.amount);
      expect(left).toBeLessThan(topUp);
    }
    expect(await writer.tokenBalance(small)).toBe(USDT(5));
    // The gas tank paid: every top-up plus the gas of its own transfers.
    const topUpTotal = topUps.reduce((s, t) => s + BigInt(t.amount), 0n);
    expect(tankBefore - (await writer.nativeBalance(gasTank))).toBeGreaterThan(topUpTotal);
    // Sweeps move custody, not merchant balances.
    expect(await ledgerSnapshot(database.db)).toEqual(before);
  }, 120_000);
});

describe("sweeping on the simulator", () => {
  useOwnDatabase();
  it("sweeps without gas top-ups; a new deposit to a swept address is swept again", async () => {
    const network = "USDT-TRC20";
    const chain = new SimulatedChain(database.db, { network });
    const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX);
    const writer = new SimulatorChainWriter(chain, { hotWallet: hot });
    const paid = await chain.pay(wallet.address(network, "sandbox", 100), USDT(20));
    const address = await confirmedDeposit(database.db, network, 0, USDT(20), paid.txHash);
    expect(address).toBe(paid.to);
    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    const sweeper = new Sweeper({
      db: database.db,
      network,
      environment: "sandbox",
      writer,
      address: (i) => wallet.address(network, "sandbox", i),
      threshold: USDT(10),
      logger,
      clock: systemClock,
    });
    const sender = makeSender({ db: database.db, network, writer, outcomes });
    expect(await sweeper.tick()).toBe(1);
    expect(await sender.drain(10_000)).toBe(0);
    expect(await chain.balanceOf(address)).toBe(0n);
    const hotAfterFirst = await chain.balanceOf(hot);
    // Another deposit, handed off later.
    await chain.pay(address, USDT(15));
    await database.db
      .insertInto("chain_observations")
      .values({
        id: "obs_second",
        network,
        environment: "sandbox",
        address,
        from_address: address,
        tx_hash: "ff".repeat(32),
        log_index: 0,
        block_number: 1,
        block_hash: "00",
        amount: USDT(15),
        status: "handed_off",
        handed_off_at: new Date(Date.now() + 1_000),
      })
      .execute();
    expect(await sweeper.tick()).toBe(1);
    expect(await sender.drain(10_000)).toBe(0);
    expect(await chain.balanceOf(hot)).toBe(hotAfterFirst + USDT(15));
    const topUps = await database.db
      .selectFrom("outgoing_transfers")
      .select("intent_id")
      .where("network", "=", network)
      .where("kind", "=", "gas_topup")
      .execute();
    expect(topUps).toEqual([]);
  });
});

describe("sweeping on the TRON emulator (TRC20)", () => {
  useOwnDatabase();
  it("an address holding TRX for the energy is swept at once; one without gets a TRX top-up (a signed TransferContract), then is swept", async () => {
    const network = "USDT-TRC20";
    const emulator = await startTronEmulator(node, token);
    try {
      const writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
      const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX);
      const funded: string[] = [];
      for (let i = 0; i < 3; i++) {
        const target = wallet.address(network, "sandbox", 100 + i);
        const receipt = await mintTestUsdt(node, token, tronAddressToEvm(target) as Hex, USDT(20 + i));
        const address = await confirmedDeposit(
          database.db,
          network,
          i,
          USDT(20 + i),
          receipt.transactionHash,
        );
        await node.testClient.setBalance({ address: tronAddressToEvm(address), value: 10n ** 20n });
        funded.push(address);
      }
      const poorTarget = wallet.address(network, "sandbox", 103);
      const poorReceipt = await mintTestUsdt(node, token, tronAddressToEvm(poorTarget) as Hex, USDT(30));
      const poor = await confirmedDeposit(database.db, network, 3, USDT(30), poorReceipt.transactionHash);
      const before = await ledgerSnapshot(database.db);

      const outcomes = new TransferOutcomes();
      registerSweepOutcomes(outcomes);
      const address = (i: number) => wallet.address(network, "sandbox", i);
      const sweeper = new Sweeper({
        db: database.db,
        network,
        environment: "sandbox",
        writer,
        address,
        threshold: USDT(10),
        logger,
        clock: systemClock,
      });
      expect(await sweeper.tick()).toBe(4);
      const topUps = await database.db
        .selectFrom("outgoing_transfers")
        .selectAll()
        .where("network", "=", network)
        .where("kind", "=", "gas_topup")
        .execute();
      // Only the address without TRX needs one: the energy of a transfer × price, + 10 %.
      expect(topUps.map((t) => [t.to_address, t.asset, t.from_index])).toEqual([
        [poor, "native", GAS_TANK_INDEX],
      ]);
      expect(BigInt(topUps[0]!.amount)).toBe(await writer.tokenTransferCost(poor, hot, USDT(30)));
      const poorSweep = await database.db
        .selectFrom("outgoing_transfers")
        .selectAll()
        .where("network", "=", network)
        .where("kind", "=", "sweep")
        .where("from_index", "=", 103)
        .executeTakeFirstOrThrow();
      expect(poorSweep.after_intent_id).toBe(topUps[0]!.intent_id);

      // The gas tank pays the top-up in TRX: a TransferContract built by tronweb, signed by the
      // signer, checked and executed by the emulator. The sweep of that address is signed only once
      // the top-up is confirmed.
      const gasTank = wallet.address(network, "sandbox", GAS_TANK_INDEX);
      await node.testClient.setBalance({ address: tronAddressToEvm(gasTank), value: 10n ** 20n });
      const tankBefore = await writer.nativeBalance(gasTank);
      const topUp = BigInt(topUps[0]!.amount);
      const sender = makeSender({ db: database.db, network, writer, outcomes });
      expect(await sender.drain(60_000)).toBe(0);
      for (const a of [...funded, poor]) expect(await writer.tokenBalance(a)).toBe(0n);
      expect(await writer.tokenBalance(hot)).toBe(USDT(20) + USDT(21) + USDT(22) + USDT(30));
      const transfers = await database.db
        .selectFrom("outgoing_transfers")
        .select(["kind", "status", "from_index", "tx_hash"])
        .where("network", "=", network)
        .orderBy("kind")
        .orderBy("from_index")
        .execute();
      expect(transfers.map((r) => [r.kind, r.status, r.from_index])).toEqual([
        ["gas_topup", "confirmed", GAS_TANK_INDEX],
        ["sweep", "confirmed", 100],
        ["sweep", "confirmed", 101],
        ["sweep", "confirmed", 102],
        ["sweep", "confirmed", 103],
      ]);
      // The sweep of the poor address was signed only after its top-up was confirmed.
      const topUpDone = await database.db
        .selectFrom("outgoing_transfers")
        .select("finished_at")
        .where("intent_id", "=", topUps[0]!.intent_id)
        .executeTakeFirstOrThrow();
      const poorSigned = await database.db
        .selectFrom("outgoing_transfer_attempts")
        .select((eb) => eb.fn.min("created_at").as("first"))
        .where("intent_id", "=", poorSweep.intent_id)
        .executeTakeFirstOrThrow();
      expect(topUpDone.finished_at).not.toBeNull();
      expect(new Date(poorSigned.first as Date).getTime()).toBeGreaterThanOrEqual(
        (topUpDone.finished_at as Date).getTime(),
      );
      // What TRON charges (issue #38): the top-up created the poor address's account, so the tank
      // paid the amount, the creation fee (1 TRX) and, without staked bandwidth, 0.1 TRX for its
      // bandwidth. The sweep then burned its energy at 210 sun (65k: the hot wallet already held
      // USDT) and no TRX for bandwidth (a new account's free 600 bytes): the top-up, priced before
      // the hot wallet held any (130k), left the rest on the deposit address.
      const topUpCharges = emulator.charges(transfers[0]!.tx_hash as string);
      expect(topUpCharges).toMatchObject({ contractFee: 1_000_000n, netFee: 100_000n, energyFee: 0n });
      expect(await writer.nativeBalance(gasTank)).toBe(tankBefore - topUp - 1_100_000n);
      const sweepHash = transfers.find((t) => t.kind === "sweep" && t.from_index === 103)?.tx_hash;
      const sweepCharges = emulator.charges(sweepHash as string);
      expect(sweepCharges).toMatchObject({
        netFee: 0n,
        energyUsage: 0,
        energyTotal: 64_285,
        energyFee: 64_285n * 210n,
        outOfEnergy: false,
      });
      expect(await writer.nativeBalance(poor)).toBe(topUp - 64_285n * 210n);
      // Its on-chain transaction is the TransferContract the sender checked.
      const topUpCheck = await writer.check(transfers[0]!.tx_hash as string, {
        asset: "native",
        from: gasTank,
        to: poor,
        amount: topUp,
      });
      expect(topUpCheck.state).toBe("success");
      const wrong = await writer.check(transfers[0]!.tx_hash as string, {
        asset: "native",
        from: gasTank,
        to: poor,
        amount: topUp + 1n,
      });
      expect(wrong).toMatchObject({ state: "failed", reason: "wrong amount" });
      expect(await ledgerSnapshot(database.db)).toEqual(before);
    } finally {
      await emulator.stop();
    }
  }, 120_000);
});
