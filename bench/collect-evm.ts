/**
 * `npm run bench:collect:evm` — the EVM part of `bench:collect` (issue #39): what collecting deposits
 * costs in gas, today (a gas top-up from the gas tank, then the deposit address's own token
 * transfer) and with batched EIP-7702 sweeps (one transaction of the gas tank through the sweeper
 * contract, the addresses authorised in it the first time).
 *
 * For each count of BENCH_EVM_ADDRESSES (default `1,10,100`), on a fresh anvil (`--hardfork prague`)
 * and database per run: that many deposits of 20 USDT (TestUSDT: Tether's contract, 6 decimals) to
 * fresh deposit addresses, collected by the real sweeper, sender and signer; then a second deposit
 * to each of the same addresses, collected again (a batch no longer authorises them; a top-up then
 * tops up what the first left). Gas is read from the receipts the sender recorded
 * (`resource_used`): top-ups and sweeps, or batches; the sweeper contract's one deployment per chain
 * and hot wallet is printed beside, not spread over the deposits. It checks that every deposit
 * reached the hot wallet and prints the native coin left on the deposit addresses.
 *
 * The two ways run alternately, BENCH_ROUNDS rounds each (default 3; gas is deterministic here,
 * so the spread shows whether anything else moved), and the ratio's median and spread are printed.
 * It ends with one line per goal: ≤ 35,000 gas per deposit at 100 addresses with batched sweeps
 * (the first sweep, authorisations included), and no native coin left on any deposit address.
 */
import type { Hex } from "viem";
import { EvmChainWriter } from "../src/chains/evm/evm-writer.js";
import { systemClock } from "../src/lib/clock.js";
import { createMerchantWithKeys } from "../src/merchants/index.js";
import { TransferOutcomes } from "../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../src/wallet/derivation-path.js";
import { logger, makeSender, wallet } from "../test/sender/support.js";
import { deployTestUsdt, mintTestUsdt, startAnvil } from "../test/support/chain/anvil.js";
import { confirmedDeposit } from "../test/support/confirmed-deposit.js";
import { alternate, benchRounds, freshDatabase, reportRounds } from "./support.js";

const NETWORK = "USDT-ERC20";
const COUNTS = (process.env.BENCH_EVM_ADDRESSES ?? "1,10,100").split(",").map(Number);
const AMOUNT = 20_000_000n;
const GOAL_GAS = 35_000;
const GOAL_AT = 100;

type Mode = "topup" | "batch";

interface Figures {
  /** Gas per deposit of the first collection (batch: authorisations included). */
  first: number;
  /** Gas per deposit of the second collection from the same addresses. */
  again: number;
  /** The sweeper contract's deployment (batch only). */
  deploy: number;
  /** Native coin (wei) left on all the deposit addresses after both. */
  nativeLeft: bigint;
  /** Transactions sent for the first collection (the deployment apart). */
  transactions: number;
}

const progress = (message: string) => process.stderr.write(`  ${message}\n`);

async function run(mode: Mode, count: number): Promise<Figures> {
  const anvil = await startAnvil(["--hardfork", "prague"]);
  const database = await freshDatabase(process.env.BENCH_DATABASE_URL, "stablegate_bench_collect_evm");
  try {
    const db = database.db;
    const token = await deployTestUsdt(anvil);
    const writer = new EvmChainWriter({ rpcUrl: anvil.rpcUrl, tokenAddress: token });
    const address = (i: number) => wallet.address(NETWORK, "sandbox", i);
    await anvil.testClient.setBalance({ address: address(GAS_TANK_INDEX) as Hex, value: 10n ** 21n });
    const { id: merchantId } = await createMerchantWithKeys(db, {
      email: "collect-evm@example.com",
      companyName: "Collect Co",
    });
    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    const sweeper = new Sweeper({
      db,
      network: NETWORK,
      environment: "sandbox",
      writer,
      address,
      threshold: 1_000_000n,
      logger,
      clock: systemClock,
      ...(mode === "batch" ? { batch: {} } : {}),
    });
    const sender = makeSender({ db, network: NETWORK, writer, outcomes });
    const collect = async () => {
      for (;;) {
        let queued = 0;
        for (;;) {
          const n = await sweeper.tick();
          if (n === 0) break;
          queued += n;
        }
        if (queued === 0) return;
        const open = await sender.drain(600_000);
        if (open !== 0) throw new Error(`${open} transfers still open`);
      }
    };
    /** Gas of the collection's transactions finished since `since` (the deployment apart). */
    const gasSince = async (since: Date) => {
      const rows = await db
        .selectFrom("outgoing_transfers")
        .select(["kind", "resource_used", "status"])
        .where("finished_at", ">=", since)
        .where("kind", "in", ["gas_topup", "sweep", "sweep_batch", "sweeper_deploy"])
        .execute();
      const failed = rows.filter((r) => r.status !== "confirmed");
      if (failed.length > 0) throw new Error(`${failed.length} collection transfers failed`);
      let gas = 0n;
      let deploy = 0n;
      let transactions = 0;
      for (const r of rows) {
        if (r.resource_used === null) continue; // a batch's sweeps: their gas is the batch's
        if (r.kind === "sweeper_deploy") deploy += BigInt(r.resource_used);
        else {
          gas += BigInt(r.resource_used);
          transactions++;
        }
      }
      return { gas, deploy, transactions };
    };

    // 1. Deposits to fresh addresses, then the first collection.
    const addresses: Hex[] = [];
    for (let i = 0; i < count; i++) {
      const { address: a } = await db.transaction().execute((trx) =>
        confirmedDeposit(trx, {
          deriver: wallet,
          merchantId,
          network: NETWORK,
          i,
          amount: AMOUNT,
          txHash: i.toString(16).padStart(64, "0"),
        }),
      );
      addresses.push(a as Hex);
      await mintTestUsdt(anvil, token, a as Hex, AMOUNT);
    }
    const t1 = new Date();
    await collect();
    const first = await gasSince(t1);

    // 2. A second deposit to each, handed off after the first look; collected again.
    for (const [i, a] of addresses.entries()) {
      const receipt = await mintTestUsdt(anvil, token, a, AMOUNT);
      await db
        .insertInto("chain_observations")
        .values({
          id: `obs_again_${i}`,
          network: NETWORK,
          environment: "sandbox",
          address: a,
          from_address: a,
          tx_hash: receipt.transactionHash,
          log_index: 0,
          block_number: 1,
          block_hash: "0x00",
          amount: AMOUNT,
          status: "handed_off",
          handed_off_at: new Date(Date.now() + 1_000),
        })
        .execute();
    }
    await new Promise((r) => setTimeout(r, 1_100));
    const t2 = new Date();
    await collect();
    const again = await gasSince(t2);

    const hot = await writer.tokenBalance(address(HOT_WALLET_INDEX));
    if (hot !== 2n * AMOUNT * BigInt(count))
      throw new Error(`the hot wallet holds ${hot}, not every deposit`);
    let nativeLeft = 0n;
    for (const a of addresses) {
      if ((await writer.tokenBalance(a)) !== 0n) throw new Error(`${a} was not swept`);
      nativeLeft += await writer.nativeBalance(a);
    }
    return {
      first: Number(first.gas) / count,
      again: Number(again.gas) / count,
      deploy: Number(first.deploy + again.deploy),
      nativeLeft,
      transactions: first.transactions,
    };
  } finally {
    await database.close();
    await anvil.stop();
  }
}

const rounds = benchRounds();
const gas = (x: number) => Math.round(x).toLocaleString("en-US");
const summary: { count: number; topup: Figures; batch: Figures }[] = [];
for (const count of COUNTS) {
  progress(`${count} addresses: ${rounds} rounds of top-up and batch`);
  const results = await alternate(rounds, { a: "topup" as Mode, b: "batch" as Mode }, (mode) =>
    run(mode, count),
  );
  reportRounds({
    title: `${count} deposit addresses, first collection: gas per deposit`,
    a: "top-up + sweep",
    b: "batched 7702",
    ratioName: "batched / top-up",
    rounds: results,
    value: (f) => f.first,
    ratio: (a, b) => b / a,
    format: gas,
  });
  reportRounds({
    title: `${count} deposit addresses, second collection from the same addresses: gas per deposit`,
    a: "top-up + sweep",
    b: "batched 7702",
    ratioName: "batched / top-up",
    rounds: results,
    value: (f) => f.again,
    ratio: (a, b) => b / a,
    format: gas,
  });
  const last = results.at(-1)!;
  summary.push({ count, topup: last.a, batch: last.b });
}

console.log(
  "\n| addresses | today: gas per deposit (first / again) | transactions | native left on the addresses | batched 7702: gas per deposit (first / again) | transactions | native left | sweeper deployment (once) |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const s of summary)
  console.log(
    `| ${s.count} | ${gas(s.topup.first)} / ${gas(s.topup.again)} | ${s.topup.transactions} | ${s.topup.nativeLeft} wei | ${gas(s.batch.first)} / ${gas(s.batch.again)} | ${s.batch.transactions} | ${s.batch.nativeLeft} wei | ${gas(s.batch.deploy)} gas |`,
  );
console.log("");
const atGoal = summary.find((s) => s.count === GOAL_AT);
if (atGoal) {
  const worst = Math.max(atGoal.batch.first, atGoal.batch.again);
  console.log(
    `goal: gas per deposit ≤ ${gas(GOAL_GAS)} at ${GOAL_AT} addresses with batched 7702 sweeps → ${worst <= GOAL_GAS ? "met" : "NOT met"} (${gas(atGoal.batch.first)} the first time, authorisations included; ${gas(atGoal.batch.again)} after)`,
  );
} else
  console.log(
    `goal: gas per deposit ≤ ${gas(GOAL_GAS)} at ${GOAL_AT} addresses → NOT met (not run at ${GOAL_AT})`,
  );
const left = summary.reduce((s, r) => s + r.batch.nativeLeft, 0n);
console.log(
  `goal: no native coin left on any deposit address with batched sweeps → ${left === 0n ? "met" : "NOT met"} (${left} wei in all; today ${summary.reduce((s, r) => s + r.topup.nativeLeft, 0n)} wei)`,
);
process.exit(0);
