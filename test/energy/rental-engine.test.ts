import type { Hex } from "viem";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import type { Database } from "../../src/db/database.js";
import { EnergyEngine, type EnergyPolicy } from "../../src/energy/index.js";
import { ItrxRental } from "../../src/energy/itrx-rental.js";
import { registerEnergyOutcomes } from "../../src/energy/jobs.js";
import type { Clock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { claimRental, formatCostTable, transferCosts } from "../../src/sender/index.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { Sender } from "../../src/sender/sender.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { localSigner, USDT, wallet } from "../sender/support.js";
import { requestTransfer } from "../support/backed-transfer.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { confirmedDeposit } from "../support/confirmed-deposit.js";
import { openTestDatabase } from "../support/db.js";
import { type ItrxFake, startItrxFake } from "../support/itrx-fake.js";

// Issue #38, decision 21: energy rental wired into the engine, for an operator without stake. A
// sweep short of energy gets its address activated (1 sun), the engine orders the energy from the
// provider (a local fake of itrx.io's API that delivers by delegating on the TRON emulator) once the
// activation is confirmed, and the sweep is signed when the chain shows the energy. What the
// provider charged is a cost in the books. A refusal or an order that never arrives falls back to
// the burn; an interrupted order is never placed twice.

const network = "USDT-TRC20";
const environment = "sandbox";
const address = (i: number) => wallet.address(network, environment, i);
const hot = address(HOT_WALLET_INDEX);
const gasTank = address(GAS_TANK_INDEX);
const TRX = (n: number) => BigInt(n) * 1_000_000n;
const WEI_PER_SUN = 10n ** 12n;
/** The provider's own stake on the emulator, from which the fake delivers. */
const provider = "0x00000000000000000000000000000000000e4e12" as Hex;

let node: AnvilNode;
let token: Hex;
let emulator: TronEmulator;
let writer: TronChainWriter;
let database: Database;
let fake: ItrxFake;
let merchantId: string;
/** Whether the fake delivers what it sells (a provider that takes the money and sends nothing). */
let delivering = true;
let offsetMs = 0;
const clock: Clock = { now: () => Date.now() + offsetMs };
const logs: Record<string, unknown>[] = [];
const logger = createLogger("info", {
  write(line: string) {
    logs.push(JSON.parse(line));
  },
});

const policy: EnergyPolicy = {
  maxWaitMs: 3_600_000,
  burnCeilingSun: 1n,
  reserveSun: TRX(10),
  bandwidthStakePercent: 6,
  rentalWaitMs: 600_000,
};

beforeAll(async () => {
  [node, database] = await Promise.all([startAnvil(), openTestDatabase()]);
  token = await deployTestUsdt(node);
  emulator = await startTronEmulator(node, token);
  writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
  merchantId = (
    await createMerchantWithKeys(database.db, { email: "rental@example.com", companyName: "Rental" })
  ).id;
  await mintTestUsdt(node, token, tronAddressToEvm(hot) as Hex, USDT(1_000));
  await node.testClient.setBalance({
    address: tronAddressToEvm(hot) as Hex,
    value: TRX(1_000) * WEI_PER_SUN,
  });
  await node.testClient.setBalance({
    address: tronAddressToEvm(gasTank) as Hex,
    value: TRX(1_000) * WEI_PER_SUN,
  });
  emulator.resources.freeze(provider, 10_000_000n * 1_000_000n, "ENERGY", 10_000_000n * 1_000_000n);
  fake = await startItrxFake(async (to, energy) => {
    const r = tronAddressToEvm(to);
    // A real provider cannot delegate to an address without an account.
    if (!emulator.resources.exists(r)) return false;
    if (!delivering) return;
    const target = emulator.resources.energyLeft(r) + energy;
    while (emulator.resources.energyLeft(r) < target)
      emulator.resources.delegate(provider, r, TRX(1_000), "ENERGY", null);
  });
});

afterAll(async () => {
  await fake?.stop();
  await emulator?.stop();
  await node?.stop();
  await database?.close();
});

beforeEach(() => {
  fake.price = 60;
  fake.mode = "normal";
  delivering = true;
  logs.length = 0;
});

function parts(maxSunPerEnergy = 80, timeoutMs = 2_000, withRental = true) {
  const outcomes = new TransferOutcomes();
  registerSweepOutcomes(outcomes);
  registerEnergyOutcomes(outcomes, logger);
  outcomes.register("withdrawal", async () => {});
  const engine = new EnergyEngine({
    db: database.db,
    network,
    environment,
    writer,
    address,
    policy,
    ...(withRental
      ? {
          rental: new ItrxRental({
            url: fake.url,
            apiKey: fake.apiKey,
            apiSecret: fake.apiSecret,
            maxSunPerEnergy,
            timeoutMs,
          }),
        }
      : {}),
    logger,
    clock,
  });
  const sender = new Sender({
    db: database.db,
    network,
    environment,
    writer,
    signer: localSigner(database.db, emulator.tokenAddress),
    address,
    outcomes,
    confirmations: 1,
    logger,
    clock,
    recheckMs: 0,
    energy: engine,
  });
  const sweeper = new Sweeper({
    db: database.db,
    network,
    environment,
    writer,
    address,
    threshold: USDT(10),
    logger,
    clock,
    energy: engine,
  });
  return { engine, sender, sweeper };
}

/** Sender, engine and sweeper rounds (the gate's short waits skipped) until nothing is open. */
async function settle(p: ReturnType<typeof parts>, rounds = 60): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await p.engine.tick();
    await p.sender.tick();
    await p.sweeper.tick();
    if ((await p.sender.openCount()) === 0 && !(await openRentals())) return;
    offsetMs += 5_000;
    await new Promise((r) => setTimeout(r, 50));
  }
  const rows = await database.db
    .selectFrom("outgoing_transfers")
    .select(["intent_id", "kind", "status", "last_error", "reason"])
    .where("status", "in", ["queued", "signed", "broadcast"])
    .execute();
  throw new Error(`still open: ${JSON.stringify(rows)} ${JSON.stringify(await rentals())}`);
}

async function rentals() {
  return database.db
    .selectFrom("energy_rentals")
    .select([
      "id",
      "receiver",
      "energy",
      "status",
      "after_intent_id",
      "serves_intent_id",
      "paid_sun",
      "serial",
      "reason",
    ])
    .orderBy("created_at")
    .execute();
}

async function openRentals(): Promise<boolean> {
  return (await rentals()).some((r) => ["requested", "ordering", "ordered", "unknown"].includes(r.status));
}

async function transfers(kind: string) {
  return database.db
    .selectFrom("outgoing_transfers")
    .select([
      "intent_id",
      "status",
      "to_address",
      "from_index",
      "amount",
      "tx_hash",
      "after_intent_id",
      "reason",
    ])
    .where("kind", "=", kind as never)
    .orderBy("created_at")
    .execute();
}

async function deposit(i: number, amount: bigint): Promise<string> {
  // Deposit addresses are allocated in order from index 100 (the tests deposit in order).
  const target = address(100 + i);
  const receipt = await mintTestUsdt(node, token, tronAddressToEvm(target) as Hex, amount);
  return database.db.transaction().execute(async (trx) => {
    const { address: a } = await confirmedDeposit(trx, {
      deriver: wallet,
      merchantId,
      network,
      i,
      amount,
      txHash: receipt.transactionHash,
    });
    return a;
  });
}

describe("energy rental wired into the engine (operator without stake)", () => {
  it("a fresh deposit: activation (1 sun) → the order, after the activation → the chain shows the energy → the sweep burns no energy; the rental is a collection cost", async () => {
    const p = parts();
    const a = await deposit(0, USDT(20));
    const orders = fake.orders.length;
    expect(await p.sweeper.tick()).toBe(1);
    // Queued in the sweep's transaction: the 1-sun activation, the rental waiting for it, the sweep.
    const [topUp] = (await transfers("gas_topup")).filter((t) => t.to_address === a);
    const [sweep] = (await transfers("sweep")).filter((t) => t.after_intent_id === topUp!.intent_id);
    expect(BigInt(topUp!.amount)).toBe(1n);
    const [rental] = (await rentals()).filter((r) => r.receiver === a);
    expect(rental).toMatchObject({
      status: "requested",
      after_intent_id: topUp!.intent_id,
      serves_intent_id: sweep!.intent_id,
    });
    // Nothing is ordered before the activation is confirmed (a provider cannot delegate to it).
    await p.engine.tick();
    expect(fake.orders).toHaveLength(orders);
    await settle(p);
    expect(await writer.tokenBalance(a)).toBe(0n);
    const [done] = (await transfers("sweep")).filter((t) => t.intent_id === sweep!.intent_id);
    expect(done!.status).toBe("confirmed");
    expect(emulator.charges(done!.tx_hash!)).toMatchObject({ energyFee: 0n, outOfEnergy: false });
    // One order, referenced by the rental's id, for the sweep's shortfall with the margin.
    expect(fake.orders.slice(orders)).toEqual([
      {
        receiver: a,
        energy: Number(rental!.energy),
        reference: rental!.id,
        paid: BigInt(rental!.energy) * 60n,
      },
    ]);
    expect(Number(rental!.energy)).toBeGreaterThanOrEqual(Math.ceil(64_285 * 1.1));
    const [closed] = (await rentals()).filter((r) => r.id === rental!.id);
    expect(closed).toMatchObject({ status: "delivered", paid_sun: String(BigInt(rental!.energy) * 60n) });
    // Costs: the rental is collection, "paid by rental"; the activation burned 1.1 TRX.
    const costs = await transferCosts(database.db, new Date(0));
    const collection = costs.find((c) => c.purpose === "collection")!;
    expect(collection.rental).toBe(BigInt(rental!.energy) * 60n);
    expect(collection.fee).toBe(collection.rental + 1_100_000n);
    expect(formatCostTable(costs)).toMatch(/collection .* 1\.100 TRX +4\.2\d\d TRX/);
  }, 180_000);

  it("a withdrawal from the hot wallet: the energy rented for it, no energy burned; an outgoing cost", async () => {
    const p = parts();
    const payee = address(901);
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_rental_w1",
        kind: "withdrawal",
        network,
        environment,
        to: payee,
        amount: USDT(5),
      }),
    );
    await settle(p);
    const [w] = (await transfers("withdrawal")).filter((t) => t.intent_id === "tx_rental_w1");
    expect(w!.status).toBe("confirmed");
    expect(emulator.charges(w!.tx_hash!)).toMatchObject({ energyFee: 0n, outOfEnergy: false });
    const [rental] = (await rentals()).filter((r) => r.receiver === hot);
    // The rental served the batch's oldest transfer (one rental per transfer).
    expect(rental).toMatchObject({ status: "delivered", serves_intent_id: "tx_rental_w1" });
    // To a new holder: 130,285 energy, with the margin.
    expect(Number(rental!.energy)).toBeGreaterThanOrEqual(Math.ceil(130_285 * 1.1));
    const outgoing = (await transferCosts(database.db, new Date(0))).find((c) => c.purpose === "outgoing")!;
    expect(outgoing.rental).toBe(BigInt(rental!.paid_sun!));
  }, 180_000);

  it("the provider refuses (its price rose above the cap): no order; the sweep fails unsigned, is planned again and burns; the deposit is swept once", async () => {
    const p = parts(80);
    const a = await deposit(1, USDT(25));
    fake.price = 90; // below the 210-sun burn, above the operator's cap of 80
    const orders = fake.orders.length;
    await settle(p);
    expect(fake.orders).toHaveLength(orders);
    const mine = (await rentals()).filter((r) => r.receiver === a);
    expect(mine.map((r) => r.status)).toEqual(["refused"]);
    expect(mine[0]!.reason).toMatch(/above the cap of 80 sun per unit/);
    const fromA = (await transfers("sweep")).filter((s) => Number(s.from_index) === 101);
    expect(fromA.map((s) => s.status)).toEqual(["failed", "confirmed"]);
    expect(fromA[0]!.reason).toMatch(/^energy_rental_refused: /);
    expect(fromA[0]!.tx_hash).toBeNull();
    // The second burned its energy (the fallback), and the deposit left the address once.
    expect(emulator.charges(fromA[1]!.tx_hash!)!.energyFee).toBeGreaterThan(0n);
    expect(await writer.tokenBalance(a)).toBe(0n);
  }, 180_000);

  it("a provider that takes the order but never delivers: past the rental's wait it expires (an alert), the sweep is planned again and burns; no second order to that address", async () => {
    const p = parts();
    const a = await deposit(2, USDT(30));
    delivering = false;
    const orders = fake.orders.length;
    expect(await p.sweeper.tick()).toBe(1);
    for (let i = 0; i < 6; i++) {
      await p.sender.tick();
      await p.engine.tick();
      offsetMs += 5_000;
    }
    expect(fake.orders).toHaveLength(orders + 1);
    // Still waiting for the energy: nothing signed.
    expect(
      (await transfers("sweep")).filter((s) => s.status === "signed" || s.status === "broadcast"),
    ).toEqual([]);
    offsetMs += 600_000;
    await settle(p);
    expect(fake.orders).toHaveLength(orders + 1);
    const mine = (await rentals()).filter((r) => r.receiver === a);
    expect(mine.map((r) => r.status)).toEqual(["expired"]);
    expect(logs.some((l) => l.alert === "energy_rental_not_delivered" && l.rental === mine[0]!.id)).toBe(
      true,
    );
    const [failed] = (await transfers("sweep")).filter((s) => s.intent_id === mine[0]!.serves_intent_id);
    expect(failed).toMatchObject({ status: "failed", tx_hash: null });
    expect(failed!.reason).toMatch(/^energy_rental_expired: /);
    expect(await writer.tokenBalance(a)).toBe(0n);
  }, 180_000);

  it("an order interrupted between the claim and the answer is never placed again: `unknown`, an alert, the chain decides", async () => {
    const p = parts();
    const a = await deposit(3, USDT(15));
    expect(await p.sweeper.tick()).toBe(1);
    // Activation confirmed; then a worker claims the order and dies before calling the provider.
    for (
      let i = 0;
      i < 10 && (await transfers("gas_topup")).some((t) => t.to_address === a && t.status !== "confirmed");
      i++
    ) {
      await p.sender.tick();
      await new Promise((r) => setTimeout(r, 50));
    }
    const [rental] = (await rentals()).filter((r) => r.receiver === a);
    expect(await claimRental(database.db, rental!.id, new Date(clock.now()))).toBe(true);
    const orders = fake.orders.length;
    // Two workers' rounds at once, after the claim went stale: neither orders.
    offsetMs += 121_000;
    await Promise.all([p.engine.tick(), parts().engine.tick()]);
    expect(fake.orders).toHaveLength(orders);
    const [unknown] = (await rentals()).filter((r) => r.id === rental!.id);
    expect(unknown!.status).toBe("unknown");
    expect(logs.some((l) => l.alert === "energy_rental_unknown" && l.rental === rental!.id)).toBe(true);
    // Nothing came: past the wait it expires and the sweep falls back to the burn.
    offsetMs += 600_000;
    await settle(p);
    expect(fake.orders).toHaveLength(orders);
    expect(await writer.tokenBalance(a)).toBe(0n);
  }, 180_000);

  it("two engines ordering at once place one order per rental", async () => {
    const a = await deposit(4, USDT(12));
    const p = parts();
    expect(await p.sweeper.tick()).toBe(1);
    for (
      let i = 0;
      i < 10 && (await transfers("gas_topup")).some((t) => t.to_address === a && t.status !== "confirmed");
      i++
    ) {
      await p.sender.tick();
      await new Promise((r) => setTimeout(r, 50));
    }
    const orders = fake.orders.length;
    await Promise.all([p.engine.tick(), parts().engine.tick(), parts().engine.tick()]);
    expect(fake.orders.slice(orders).map((o) => o.receiver)).toEqual([a]);
    await settle(p);
    expect(await writer.tokenBalance(a)).toBe(0n);
  }, 180_000);

  it("a rental dearer than the burn: nothing ordered, the sweep burns as before", async () => {
    const p = parts(10_000);
    const a = await deposit(5, USDT(11));
    fake.price = 300; // above the 210-sun burn
    const orders = fake.orders.length;
    await settle(p);
    expect(fake.orders).toHaveLength(orders);
    expect((await rentals()).filter((r) => r.receiver === a)).toEqual([]);
    expect(await writer.tokenBalance(a)).toBe(0n);
  }, 180_000);

  it("a hanging provider is asked once, not once per address: the sweeps burn, nothing is ordered", async () => {
    const p = parts(80, 300);
    const addresses = [await deposit(6, USDT(13)), await deposit(7, USDT(14)), await deposit(8, USDT(15))];
    fake.mode = "hang";
    const before = fake.requests.length;
    expect(await p.sweeper.tick()).toBe(3);
    expect(fake.requests.slice(before)).toEqual(["GET price"]);
    fake.mode = "normal";
    await settle(p);
    for (const a of addresses) expect(await writer.tokenBalance(a)).toBe(0n);
    expect((await rentals()).filter((r) => addresses.includes(r.receiver))).toEqual([]);
  }, 180_000);

  it("the provider taken out of the configuration while a rental waits to be ordered: refused, the sweep burns", async () => {
    const a = await deposit(9, USDT(16));
    expect(await parts().sweeper.tick()).toBe(1);
    expect((await rentals()).filter((r) => r.receiver === a).map((r) => r.status)).toEqual(["requested"]);
    // The workers restart without TRC20_RENTAL_*: an engine without a provider.
    const p = parts(80, 2_000, false);
    const orders = fake.orders.length;
    await settle(p);
    expect(fake.orders).toHaveLength(orders);
    const mine = (await rentals()).filter((r) => r.receiver === a);
    expect(mine.map((r) => [r.status, r.reason])).toEqual([
      ["refused", "no energy rental provider is configured"],
    ]);
    expect(await writer.tokenBalance(a)).toBe(0n);
  }, 180_000);
});
