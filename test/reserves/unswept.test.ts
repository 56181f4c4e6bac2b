import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedChain } from "../../src/chains/simulator/simulated-chain.js";
import { SimulatorChainWriter } from "../../src/chains/simulator/simulator-writer.js";
import type { Database, Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { Environment } from "../../src/domain/environment.js";
import { creditDeposit } from "../../src/ledger/operations.js";
import { systemClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { type ReserveReport, reconcileReserves } from "../../src/reserves/index.js";
import { recordSendingWallets } from "../../src/sender/index.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { logger, makeSender, USDT, wallet } from "../sender/support.js";
import { openTestDatabase } from "../support/db.js";

// Reserve reconciliation reads on chain the deposit addresses that received more (in deposits
// handed off) than was swept from them (confirmed sweeps). On the sandbox simulator with the real
// sweeper and sender: the count and the amount of those addresses, and that a confirmed sweep (only
// a confirmed one, from that address, on that chain) takes an address out.

const TRC: CurrencyType = "USDT-TRC20";
let database: Database;
let merchantId: string;
let chain: SimulatedChain;
let writer: SimulatorChainWriter;
const hot = wallet.address(TRC, "sandbox", HOT_WALLET_INDEX);
let seq = 0;

beforeAll(async () => {
  database = await openTestDatabase();
  merchantId = (
    await createMerchantWithKeys(database.db, {
      email: `unswept-${Date.now()}@example.com`,
      companyName: "U",
    })
  ).id;
  chain = new SimulatedChain(database.db, { network: TRC });
  writer = new SimulatorChainWriter(chain, { hotWallet: hot });
});
afterAll(() => database?.close());

/** A new watched deposit address of `network`/`environment` (the next index of its sequence). */
async function newAddress(network: CurrencyType, environment: Environment = "sandbox") {
  return database.db
    .transaction()
    .execute((trx) =>
      allocateDepositAddress(trx, { deriver: wallet, network, environment, merchantId, purpose: "wallet" }),
    );
}

/**
 * A deposit to `address` as the watcher and the deposit logic leave it (as in test/sweep): its
 * observation (`handed_off`, or still `observed`), and once handed off the transaction credited.
 */
async function deposit(
  db: Db,
  address: string,
  amount: bigint,
  options: { network?: CurrencyType; status?: "handed_off" | "observed"; handedOffAt?: Date } = {},
) {
  const network = options.network ?? TRC;
  const status = options.status ?? "handed_off";
  const n = ++seq;
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("chain_observations")
      .values({
        id: `obs_unswept_${n}`,
        network,
        environment: "sandbox",
        address,
        from_address: address,
        tx_hash: `${n}`.padStart(64, "0"),
        log_index: 0,
        block_number: n,
        block_hash: "00",
        amount,
        status,
        handed_off_at: status === "handed_off" ? (options.handedOffAt ?? new Date(Date.now() - 1_000)) : null,
      })
      .execute();
    if (status !== "handed_off") return;
    const txId = `tx_unswept_${n}`;
    await trx
      .insertInto("transactions")
      .values({
        id: txId,
        merchant_id: merchantId,
        environment: "sandbox",
        type: "deposit",
        status: "confirmed",
        currency_type: network,
        amount,
        net_amount: amount,
        fee: 0n,
        wallet_address: address,
      } as never)
      .execute();
    const r = await creditDeposit(
      trx,
      { merchantId, environment: "sandbox", currencyType: network, transactionId: txId },
      amount,
      0n,
    );
    expect(r.status).toBe("posted");
  });
}

/** A finished transfer of another chain, or a failed one: inserted as the sender leaves it. */
async function finishedSweep(
  network: CurrencyType,
  environment: Environment,
  fromIndex: number,
  amount: bigint,
  status: "confirmed" | "failed",
) {
  await database.db
    .insertInto("outgoing_transfers")
    .values({
      intent_id: `sweep_noise_${++seq}`,
      kind: "sweep",
      network,
      environment,
      asset: "token",
      from_index: fromIndex,
      from_address: wallet.address(network, environment, fromIndex),
      to_address: wallet.address(network, environment, HOT_WALLET_INDEX),
      amount,
      status,
      finished_at: new Date(),
    } as never)
    .execute();
}

/** The report, with the deposit addresses it read on chain. */
async function reconcile(): Promise<{ report: ReserveReport; read: string[] }> {
  const read: string[] = [];
  const report = await reconcileReserves(
    { db: database.db, clock: systemClock },
    {
      network: TRC,
      environment: "sandbox",
      adapter: {
        tokenBalance: (address: string) => {
          if (address !== hot) read.push(address);
          return writer.tokenBalance(address);
        },
      },
    },
    0n,
  );
  return { report, read: read.sort() };
}

function sweeper(threshold: bigint) {
  return new Sweeper({
    db: database.db,
    network: TRC,
    environment: "sandbox",
    writer,
    address: (i) => wallet.address(TRC, "sandbox", i),
    threshold,
    logger,
    clock: systemClock,
  });
}

async function sweepAndConfirm(threshold: bigint, expected: number) {
  const outcomes = new TransferOutcomes();
  registerSweepOutcomes(outcomes);
  expect(await sweeper(threshold).tick()).toBe(expected);
  expect(await makeSender({ db: database.db, network: TRC, writer, outcomes }).drain(10_000)).toBe(0);
  await recordSendingWallets(database.db, { network: TRC, environment: "sandbox" }, writer, {
    hotWallet: hot,
    gasTank: wallet.address(TRC, "sandbox", GAS_TANK_INDEX),
  });
}

let a: { address: string; index: number };
let b: { address: string; index: number };

describe("reserve reconciliation: deposit addresses holding unswept deposits", () => {
  it("counts the addresses with handed-off deposits not swept, and reads their balances", async () => {
    expect((await reconcile()).report).toMatchObject({
      addressesUnswept: 0,
      addressesRead: 0,
      depositAddresses: 0n,
    });

    a = await newAddress(TRC);
    b = await newAddress(TRC);
    await chain.pay(a.address, USDT(20));
    await deposit(database.db, a.address, USDT(20));
    await chain.pay(b.address, USDT(12));
    await deposit(database.db, b.address, USDT(12));
    await chain.pay(b.address, USDT(18));
    await deposit(database.db, b.address, USDT(18));
    // Not counted: a transfer seen but not handed off yet; a deposit on another chain.
    const seen = await newAddress(TRC);
    await chain.pay(seen.address, USDT(40));
    await deposit(database.db, seen.address, USDT(40), { status: "observed" });
    const erc = await newAddress("USDT-ERC20");
    await deposit(database.db, erc.address, USDT(70), { network: "USDT-ERC20" });
    // Not a sweep of A: a failed one from its index, confirmed ones from the same index of another
    // network and of the production environment.
    await finishedSweep(TRC, "sandbox", a.index, USDT(20), "failed");
    await finishedSweep("USDT-ERC20", "sandbox", a.index, USDT(20), "confirmed");
    await finishedSweep(TRC, "production", a.index, USDT(20), "confirmed");

    const { report, read } = await reconcile();
    expect(report).toMatchObject({
      addressesUnswept: 2,
      addressesRead: 2,
      depositAddresses: USDT(50),
      notes: [expect.stringMatching(/hot wallet not recorded/)],
    });
    expect(read).toEqual([a.address, b.address].sort());
  });

  it("a sweep still open leaves the address counted; once confirmed it is no longer", async () => {
    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    // Only B (30 USDT) reaches the threshold.
    expect(await sweeper(USDT(25)).tick()).toBe(1);
    const open = await reconcile();
    expect(open.report).toMatchObject({
      addressesUnswept: 2,
      depositAddresses: USDT(50),
      pendingSweep: USDT(30),
    });

    expect(await makeSender({ db: database.db, network: TRC, writer, outcomes }).drain(10_000)).toBe(0);
    await recordSendingWallets(database.db, { network: TRC, environment: "sandbox" }, writer, {
      hotWallet: hot,
      gasTank: wallet.address(TRC, "sandbox", GAS_TANK_INDEX),
    });
    const swept = await database.db
      .selectFrom("outgoing_transfers")
      .select(["from_index", "amount", "status"])
      .where("network", "=", TRC)
      .where("environment", "=", "sandbox")
      .where("kind", "=", "sweep")
      .where("status", "=", "confirmed")
      .execute();
    expect(swept.map((s) => [s.from_index, String(s.amount)])).toEqual([[b.index, String(USDT(30))]]);

    const { report, read } = await reconcile();
    expect(report).toMatchObject({
      addressesUnswept: 1,
      addressesRead: 1,
      depositAddresses: USDT(20),
      hotWallet: USDT(30),
      pendingSweep: 0n,
    });
    // The simulator's wallets hold no native coin the sender could read: nothing to add.
    expect(report.native).toEqual({ hotWallet: 0n, gasTank: 0n, resourceAccount: 0n, staked: 0n });
    expect(report.notes).toEqual([]);
    expect(read).toEqual([a.address]);
  });

  it("a new deposit to a swept address counts it again until that is swept too", async () => {
    await chain.pay(b.address, USDT(15));
    await deposit(database.db, b.address, USDT(15), { handedOffAt: new Date(Date.now() + 1_000) });
    // Received 45 against 30 swept.
    const again = await reconcile();
    expect(again.report).toMatchObject({ addressesUnswept: 2, depositAddresses: USDT(35) });
    expect(again.read).toEqual([a.address, b.address].sort());

    await sweepAndConfirm(USDT(10), 1);
    const { report, read } = await reconcile();
    expect(report).toMatchObject({
      addressesUnswept: 1,
      depositAddresses: USDT(20),
      hotWallet: USDT(45),
    });
    expect(read).toEqual([a.address]);
  });
});
