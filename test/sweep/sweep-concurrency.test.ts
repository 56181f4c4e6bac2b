import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import { SimulatedChain } from "../../src/chains/simulator/simulated-chain.js";
import { SimulatorChainWriter } from "../../src/chains/simulator/simulator-writer.js";
import type { ChainWriter } from "../../src/chains/writer.js";
import { type Database, type Db, openDatabase } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { systemClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { logger, makeSender, USDT, wallet } from "../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { openTestDatabase } from "../support/db.js";

/**
 * Two workers' sweepers looking at the same deposit addresses at once (issue 25: the sweeper read
 * the balance, then queued the sweep, with no lock between). Each worker has its own Sweeper and
 * writer; on PostgreSQL each has a pool of its own on the same database, as two `worker`
 * processes do. Both start a round together and so pick the same candidates: each address must
 * get exactly one sweep (and, on Ethereum, one gas top-up). The race is between statements, so
 * it shows on PGlite too (a single connection interleaves the two sweepers' statements).
 */
const ADDRESSES = 6;
let node: AnvilNode;
let token: Hex;

beforeAll(async () => {
  node = await startAnvil(["--hardfork", "prague"]);
  token = await deployTestUsdt(node);
});
afterAll(async () => {
  await node?.stop();
});

function useTwoWorkers() {
  const dbs = {} as { first: Database & { url: string | undefined }; second: Database; merchantId: string };
  beforeAll(async () => {
    dbs.first = await openTestDatabase();
    dbs.second = dbs.first.url
      ? await openDatabase({ kind: "postgres", url: dbs.first.url, poolSize: 5 })
      : dbs.first;
    dbs.merchantId = (
      await createMerchantWithKeys(dbs.first.db, { email: "race@example.com", companyName: "Race Co" })
    ).id;
  });
  afterAll(async () => {
    if (dbs.second !== dbs.first) await dbs.second?.close();
    await dbs.first?.close();
  });
  return dbs;
}

/** A deposit address with a handed-off deposit, as the watcher leaves it (the sweeper's input). */
async function depositAddress(db: Db, merchantId: string, network: CurrencyType, i: number): Promise<string> {
  return db.transaction().execute(async (trx) => {
    const { address } = await allocateDepositAddress(trx, {
      deriver: wallet,
      network,
      environment: "sandbox",
      merchantId,
      purpose: "wallet",
    });
    await trx
      .insertInto("chain_observations")
      .values({
        id: `obs_race_${network}_${i}`,
        network,
        environment: "sandbox",
        address,
        from_address: address,
        tx_hash: `0x${i.toString(16).padStart(64, "0")}`,
        log_index: i,
        block_number: 1,
        block_hash: "0x00",
        amount: 1n,
        status: "handed_off",
        handed_off_at: new Date(Date.now() - 1_000),
      })
      .execute();
    return address;
  });
}

function sweeperOn(
  db: Db,
  network: CurrencyType,
  writer: ChainWriter,
  o: { batch?: boolean; beforeAssemble?: () => Promise<void> } = {},
) {
  return new Sweeper({
    ...(o.batch ? { batch: {} } : {}),
    ...(o.beforeAssemble ? { fault: o.beforeAssemble } : {}),
    db,
    network,
    environment: "sandbox",
    writer,
    address: (i) => wallet.address(network, "sandbox", i),
    threshold: USDT(10),
    logger,
    clock: systemClock,
  });
}

async function transfersByKind(db: Db, network: CurrencyType) {
  const rows = await db
    .selectFrom("outgoing_transfers")
    .select(["kind", "status", "from_index", "to_address", "amount", "reason"])
    .where("network", "=", network)
    .execute();
  return {
    sweeps: rows.filter((r) => r.kind === "sweep"),
    topUps: rows.filter((r) => r.kind === "gas_topup"),
    deploys: rows.filter((r) => r.kind === "sweeper_deploy"),
    batches: rows.filter((r) => r.kind === "sweep_batch"),
  };
}

describe("two sweepers at once on the simulator", () => {
  const w = useTwoWorkers();
  it("each address is swept once, and every sweep confirms", async () => {
    const network = "USDT-TRC20";
    const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX);
    const chainA = new SimulatedChain(w.first.db, { network });
    const chainB = new SimulatedChain(w.second.db, { network });
    const writerA = new SimulatorChainWriter(chainA, { hotWallet: hot });
    const writerB = new SimulatorChainWriter(chainB, { hotWallet: hot });
    let total = 0n;
    const addresses: string[] = [];
    for (let i = 0; i < ADDRESSES; i++) {
      const address = await depositAddress(w.first.db, w.merchantId, network, i);
      await chainA.pay(address, USDT(20 + i));
      total += USDT(20 + i);
      addresses.push(address);
    }
    const hotBefore = await chainA.balanceOf(hot);

    const queued = await Promise.all([
      sweeperOn(w.first.db, network, writerA).tick(),
      sweeperOn(w.second.db, network, writerB).tick(),
    ]);
    expect(queued[0] + queued[1]).toBe(ADDRESSES);
    const { sweeps } = await transfersByKind(w.first.db, network);
    expect(sweeps.map((s) => s.from_index).sort()).toEqual(
      [...new Set(sweeps.map((s) => s.from_index))].sort(),
    );
    expect(sweeps).toHaveLength(ADDRESSES);

    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    expect(await makeSender({ db: w.first.db, network, writer: writerA, outcomes }).drain(20_000)).toBe(0);
    const after = await transfersByKind(w.first.db, network);
    expect(after.sweeps.filter((s) => s.status !== "confirmed")).toEqual([]);
    for (const a of addresses) expect(await chainA.balanceOf(a)).toBe(0n);
    expect(await chainA.balanceOf(hot)).toBe(hotBefore + total);
  });
});

describe("two sweepers at once on anvil (ERC20, with gas top-ups)", () => {
  const w = useTwoWorkers();
  it("each address gets one gas top-up and one sweep", async () => {
    const network = "USDT-ERC20";
    const gasTank = wallet.address(network, "sandbox", GAS_TANK_INDEX) as Hex;
    await node.testClient.setBalance({ address: gasTank, value: 10n ** 18n });
    const writerA = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
    const writerB = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
    const addresses: string[] = [];
    for (let i = 0; i < ADDRESSES; i++) {
      const address = await depositAddress(w.first.db, w.merchantId, network, i);
      await mintTestUsdt(node, token, address as Hex, USDT(20 + i));
      addresses.push(address);
    }

    const queued = await Promise.all([
      sweeperOn(w.first.db, network, writerA).tick(),
      sweeperOn(w.second.db, network, writerB).tick(),
    ]);
    expect(queued[0] + queued[1]).toBe(ADDRESSES);
    const { sweeps, topUps } = await transfersByKind(w.first.db, network);
    expect(sweeps).toHaveLength(ADDRESSES);
    expect(topUps).toHaveLength(ADDRESSES);
    expect(new Set(topUps.map((t) => t.to_address))).toEqual(new Set(addresses));

    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    expect(await makeSender({ db: w.first.db, network, writer: writerA, outcomes }).drain(60_000)).toBe(0);
    const after = await transfersByKind(w.first.db, network);
    expect([...after.sweeps, ...after.topUps].filter((t) => t.status !== "confirmed")).toEqual([]);
    for (const a of addresses) expect(await writerA.tokenBalance(a)).toBe(0n);
  }, 120_000);
});

describe("two sweepers at once on anvil with batched sweeps (issue #39), before the sweeper contract is deployed", () => {
  const w = useTwoWorkers();
  it("queue one deployment of the contract, not two (a second one would revert, failing the batches waiting for it)", async () => {
    const network = "USDT-ERC20";
    const gasTank = wallet.address(network, "sandbox", GAS_TANK_INDEX) as Hex;
    await node.testClient.setBalance({ address: gasTank, value: 10n ** 18n });
    const writerA = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
    const writerB = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
    expect(await writerA.sweeperDeployed(wallet.address(network, "sandbox", HOT_WALLET_INDEX))).toBe(false);
    const addresses: string[] = [];
    const depositsAt = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const address = await depositAddress(w.first.db, w.merchantId, network, i);
        await mintTestUsdt(node, token, address as Hex, USDT(20 + i));
        addresses.push(address);
      }
    };

    // The first worker's round queues the carried sweeps of half the addresses and waits before it
    // assembles them; the second worker's round queues the other half's; then both assemble
    // batches together (or after 5 s: `arrived` says whether they met).
    let arrived = 0;
    let release = () => {};
    const together = new Promise<void>((r) => {
      release = r;
      setTimeout(r, 5_000);
    });
    let firstWaits = () => {};
    const firstWaiting = new Promise<void>((r) => {
      firstWaits = r;
    });
    const beforeAssemble = async () => {
      if (++arrived === 2) release();
      firstWaits();
      await together;
    };
    await depositsAt(10, 10 + ADDRESSES / 2);
    const first = sweeperOn(w.first.db, network, writerA, { batch: true, beforeAssemble }).tick();
    await firstWaiting;
    await depositsAt(10 + ADDRESSES / 2, 10 + ADDRESSES);
    await Promise.all([
      first,
      sweeperOn(w.second.db, network, writerB, { batch: true, beforeAssemble }).tick(),
    ]);
    expect(arrived).toBe(2);
    const queued = await transfersByKind(w.first.db, network);
    expect(queued.deploys).toHaveLength(1);
    expect(queued.sweeps).toHaveLength(ADDRESSES);
    expect(queued.topUps).toEqual([]);

    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    expect(await makeSender({ db: w.first.db, network, writer: writerA, outcomes }).drain(60_000)).toBe(0);
    const after = await transfersByKind(w.first.db, network);
    expect(after.deploys.map((d) => d.status)).toEqual(["confirmed"]);
    expect([...after.sweeps, ...after.batches].filter((t) => t.status !== "confirmed")).toEqual([]);
    for (const a of addresses) expect(await writerA.tokenBalance(a)).toBe(0n);
  }, 120_000);
});
