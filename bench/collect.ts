/**
 * `npm run bench:collect` — what collecting TRON deposits and paying withdrawals costs in TRX
 * (issue #38), on the TRON emulator that charges what TRON charges (`test/support/chain/
 * tron-resources.ts`: bandwidth, energy at the chain's price, account creation).
 *
 * For each energy price of BENCH_PRICES (default `100,210` sun), on a fresh anvil, emulator and
 * database: BENCH_DEPOSITS (default 1000) deposits of 20 USDT to fresh deposit addresses, collected
 * by the real sweeper and sender (gas tank top-ups signed by the real signer, then the sweeps), and
 * BENCH_WITHDRAWALS (default 200) withdrawals from the hot wallet, half to addresses that already
 * hold USDT, half to fresh ones. It prints the TRX the gas tank spent per collected deposit (of which
 * what is left on the deposit addresses: paid for, never used) and the TRX the hot wallet burned
 * per withdrawal, checks that every deposit reached the hot wallet, and ends with one line per goal.
 *
 * Each price runs twice: with every fee burned (no resource account: the path without the engine),
 * and with the energy engine (src/energy/): the resource account is funded with BENCH_STAKE_TRX
 * (default 12,000,000: a day of 1,000 sweeps' and 200 withdrawals' energy at mainnet's weights, about
 * 9.5 energy per TRX a day, with room for the delegations' margin; energy used recovers over 24 h,
 * longer than a run, so a smaller stake makes the last transfers wait the policy's hour;
 * BENCH_MODES=engine or =burn runs one of the two), the engine stakes it,
 * delegates each sweep's and each withdrawal batch's energy and takes it back. The engine's cost is
 * what the gas tank spent plus what the resource account burned (its TRX, liquid and staked, before
 * minus after): stake is capital, not cost. The goals are the engine's: ≤ 1.3 TRX per collected
 * deposit (activation plus bandwidth), ≤ 0.5 TRX per withdrawal.
 *
 * Database: the embedded one (PGlite, in memory), or BENCH_DATABASE_URL's server
 * (`stablegate_bench_collect`, recreated).
 *
 * The EVM part (gas per deposit with top-ups and with batched EIP-7702 sweeps, issue #39) is
 * `npm run bench:collect:evm` (bench/collect-evm.ts).
 */
import type { Hex } from "viem";
import { tronAddressToEvm } from "../src/chains/tron/address.js";
import { TronChainWriter } from "../src/chains/tron/tron-writer.js";
import { EnergyEngine, registerEnergyOutcomes } from "../src/energy/index.js";
import { systemClock } from "../src/lib/clock.js";
import { createMerchantWithKeys } from "../src/merchants/index.js";
import { TransferOutcomes } from "../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX, RESOURCE_ACCOUNT_INDEX } from "../src/wallet/derivation-path.js";
import { logger, makeSender, wallet } from "../test/sender/support.js";
import { requestTransfer } from "../test/support/backed-transfer.js";
import { deployTestUsdt, mintTestUsdt, startAnvil } from "../test/support/chain/anvil.js";
import { startTronEmulator } from "../test/support/chain/tron-emulator.js";
import { confirmedDeposit } from "../test/support/confirmed-deposit.js";
import { freshDatabase } from "./support.js";

const NETWORK = "USDT-TRC20";
const DEPOSITS = Number(process.env.BENCH_DEPOSITS ?? 1000);
const WITHDRAWALS = Number(process.env.BENCH_WITHDRAWALS ?? 200);
const PRICES = (process.env.BENCH_PRICES ?? "100,210").split(",").map(Number);
const SUN = 1_000_000n;
const WEI_PER_SUN = 10n ** 12n;
const GOAL_DEPOSIT_TRX = 1.3;
const GOAL_WITHDRAWAL_TRX = 0.5;
const STAKE_TRX = BigInt(process.env.BENCH_STAKE_TRX ?? 12_000_000);
/** `burn`, `engine` or both (default): which of the two runs each price gets. */
const MODES = (process.env.BENCH_MODES ?? "burn,engine").split(",").map((m) => m.trim());

const trx = (sun: bigint) => Number(sun) / 1e6;

interface Figures {
  price: number;
  engine: boolean;
  perDeposit: number;
  leftPerDeposit: number;
  perWithdrawalToHolder: number;
  perWithdrawalToFresh: number;
  seconds: number;
}

const progress = (message: string) => process.stderr.write(`  ${message}\n`);

async function run(price: number, withEngine: boolean): Promise<Figures> {
  const started = Date.now();
  progress(`energy ${price} sun, ${withEngine ? "energy engine" : "burn"}: starting`);
  const anvil = await startAnvil();
  const database = await freshDatabase(process.env.BENCH_DATABASE_URL, "stablegate_bench_collect");
  try {
    const token = await deployTestUsdt(anvil);
    const emulator = await startTronEmulator(anvil, token);
    emulator.setChainParameters({ getEnergyFee: price });
    const db = database.db;
    const writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
    const sunOf = async (address: string) =>
      (await anvil.publicClient.getBalance({ address: tronAddressToEvm(address) as Hex })) / WEI_PER_SUN;
    const fund = (address: string, sun: bigint) =>
      anvil.testClient.setBalance({ address: tronAddressToEvm(address) as Hex, value: sun * WEI_PER_SUN });
    const { id: merchantId } = await createMerchantWithKeys(db, {
      email: "collect@example.com",
      companyName: "Collect Co",
    });

    // 1. Deposits to fresh addresses, confirmed and credited as the watcher leaves them.
    const addresses: string[] = [];
    for (let i = 0; i < DEPOSITS; i++) {
      const txHash = i.toString(16).padStart(64, "0");
      const { address } = await db.transaction().execute((trx) =>
        confirmedDeposit(trx, {
          deriver: wallet,
          merchantId,
          network: NETWORK,
          i,
          amount: 20n * SUN,
          txHash,
        }),
      );
      addresses.push(address);
    }
    for (const a of addresses) await mintTestUsdt(anvil, token, tronAddressToEvm(a) as Hex, 20n * SUN);
    progress(`${DEPOSITS} deposits made`);

    // 2. Collect them: the sweeper queues a top-up where an address lacks TRX, then the sweep.
    const hot = wallet.address(NETWORK, "sandbox", HOT_WALLET_INDEX);
    const tank = wallet.address(NETWORK, "sandbox", GAS_TANK_INDEX);
    const tankBefore = 1_000_000n * SUN;
    await fund(tank, tankBefore);
    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    registerEnergyOutcomes(outcomes, logger);
    // A withdrawal's outcome moves its books in the service (withdrawals/); here only its cost counts.
    outcomes.register("withdrawal", async () => undefined);
    const address = (i: number) => wallet.address(NETWORK, "sandbox", i);
    const resource = address(RESOURCE_ACCOUNT_INDEX);
    const engine = withEngine
      ? new EnergyEngine({
          db,
          network: NETWORK,
          environment: "sandbox",
          writer,
          address,
          policy: {
            maxWaitMs: 3_600_000,
            burnCeilingSun: 1n,
            reserveSun: 10n * SUN,
            bandwidthStakePercent: 6,
          },
          logger,
          clock: systemClock,
        })
      : undefined;
    const sweeper = new Sweeper({
      db,
      network: NETWORK,
      environment: "sandbox",
      writer,
      address,
      threshold: SUN,
      logger,
      clock: systemClock,
      ...(engine ? { energy: engine } : {}),
    });
    const sender = makeSender({
      db,
      network: NETWORK,
      writer,
      outcomes,
      ...(engine ? { energy: engine } : {}),
    });
    /** Sender and engine until nothing is open and the engine queues nothing more. */
    const settle = async () => {
      for (;;) {
        const open = await sender.drain(Number(process.env.BENCH_DRAIN_MS ?? 600_000));
        if (open !== 0) {
          const rows = await db
            .selectFrom("outgoing_transfers")
            .select(["intent_id", "kind", "status", "last_error"])
            .where("status", "not in", ["confirmed", "failed"])
            .limit(3)
            .execute();
          throw new Error(`${open} transfers still open: ${JSON.stringify(rows)}`);
        }
        if (!engine || !(await engine.tick())) return;
      }
    };
    // The resource account's TRX, liquid and staked: what it burned is before minus after.
    const resourceTotal = async () => {
      const staked = await writer.resources.staked(resource);
      return (await sunOf(resource)) + staked.energy + staked.bandwidth;
    };
    let resourceBefore = 0n;
    if (engine) {
      await fund(resource, STAKE_TRX * SUN);
      await settle();
      resourceBefore = await resourceTotal();
      progress(`resource account staked ${STAKE_TRX} TRX`);
    }
    // Rounds of the sweeper and the sender, as the worker runs them: with the engine, addresses the
    // stake cannot serve yet wait (sweeps planned before the hot wallet holds USDT reserve the
    // energy of a transfer to a non-holder, twice a holder's) and are swept once reclaims return
    // the stake. Stops when a round sweeps nothing more.
    for (let round = 1; ; round++) {
      let queued = 0;
      for (;;) {
        const n = await sweeper.tick();
        if (n === 0) break;
        queued += n;
      }
      progress(`round ${round}: ${queued} sweeps queued`);
      if (queued === 0) break;
      await settle();
    }
    progress("sweeps done");
    const collected = await writer.tokenBalance(hot);
    if (collected !== BigInt(DEPOSITS) * 20n * SUN)
      throw new Error(`the hot wallet holds ${collected}, not every deposit`);
    const resourceAfterSweeps = engine ? await resourceTotal() : 0n;
    const spent = tankBefore - (await sunOf(tank)) + (resourceBefore - resourceAfterSweeps);
    let leftOnAddresses = 0n;
    for (const a of addresses) leftOnAddresses += await sunOf(a);

    // 3. Withdrawals from the hot wallet: half to holders, half to fresh addresses.
    const hotBefore = 100_000n * SUN;
    await fund(hot, hotBefore);
    const holders: string[] = [];
    for (let i = 0; i < WITHDRAWALS / 2; i++) {
      const a = wallet.address(NETWORK, "sandbox", 900_000 + i);
      await mintTestUsdt(anvil, token, tronAddressToEvm(a) as Hex, 1n);
      holders.push(a);
    }
    const burnedFor = async (targets: string[], tag: string) => {
      const before = (await sunOf(hot)) + (engine ? await resourceTotal() : 0n);
      await db.transaction().execute(async (t) => {
        for (const [i, to] of targets.entries())
          await requestTransfer(t, {
            intentId: `tx_w_${tag}_${i}`,
            kind: "withdrawal",
            network: NETWORK,
            environment: "sandbox",
            to,
            amount: SUN,
          });
      });
      await settle();
      return before - (await sunOf(hot)) - (engine ? await resourceTotal() : 0n);
    };
    const toHolders = await burnedFor(holders, "holder");
    const fresh = Array.from({ length: WITHDRAWALS / 2 }, (_, i) =>
      wallet.address(NETWORK, "sandbox", 950_000 + i),
    );
    const toFresh = await burnedFor(fresh, "fresh");
    await emulator.stop();
    return {
      price,
      engine: withEngine,
      perDeposit: trx(spent) / DEPOSITS,
      leftPerDeposit: trx(leftOnAddresses) / DEPOSITS,
      perWithdrawalToHolder: trx(toHolders) / holders.length,
      perWithdrawalToFresh: trx(toFresh) / fresh.length,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await database.close();
    await anvil.stop();
  }
}

const results: Figures[] = [];
for (const price of PRICES) {
  for (const withEngine of [false, true].filter((e) => MODES.includes(e ? "engine" : "burn"))) {
    const f = await run(price, withEngine);
    results.push(f);
    console.log(
      `energy ${price} sun, ${withEngine ? "energy engine" : "burn"}: ${DEPOSITS} deposits collected, ${f.perDeposit.toFixed(3)} TRX each ` +
        `(${f.leftPerDeposit.toFixed(3)} of it left unused on the deposit address); ` +
        `withdrawals ${f.perWithdrawalToHolder.toFixed(3)} TRX to a holder, ${f.perWithdrawalToFresh.toFixed(3)} TRX to a fresh address ` +
        `(${f.seconds.toFixed(0)} s)`,
    );
  }
}
const engineRuns = results.filter((r) => r.engine);
const burnRuns = results.filter((r) => !r.engine);
// Without an engine run there is nothing to judge: the goals are NOT met (never "met" on no data).
const ran = engineRuns.length > 0;
const worstDeposit = ran ? Math.max(...engineRuns.map((r) => r.perDeposit)) : Number.NaN;
const worstWithdrawal = ran
  ? Math.max(...engineRuns.map((r) => Math.max(r.perWithdrawalToHolder, r.perWithdrawalToFresh)))
  : Number.NaN;
const burnDeposit = burnRuns.length > 0 ? Math.max(...burnRuns.map((r) => r.perDeposit)) : Number.NaN;
const verdict = (worst: number, goal: number) => (ran && worst <= goal ? "met" : "NOT met");
const figure = (worst: number, where: string) =>
  ran ? `${worst.toFixed(3)} ${where}` : "the engine not run";
console.log(
  `goal: TRX per collected deposit ≤ ${GOAL_DEPOSIT_TRX} with the energy engine → ${verdict(worstDeposit, GOAL_DEPOSIT_TRX)} (${figure(worstDeposit, "at the worst price")}; ${Number.isNaN(burnDeposit) ? "burning not run" : `${burnDeposit.toFixed(3)} burning`})`,
);
console.log(
  `goal: TRX per withdrawal ≤ ${GOAL_WITHDRAWAL_TRX} with the energy engine → ${verdict(worstWithdrawal, GOAL_WITHDRAWAL_TRX)} (${figure(worstWithdrawal, "at the worst price and recipient")})`,
);
