import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import { delegationCode, sweeperAddress } from "../../src/chains/evm/sweeper.js";
import type { Database, Db } from "../../src/db/database.js";
import { systemClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { logger, makeSender, USDT, wallet } from "../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { confirmedDeposit as confirmedDepositIn } from "../support/confirmed-deposit.js";
import { openTestDatabase } from "../support/db.js";

/**
 * EVM batched sweeps (issue #39): deposit addresses without any ETH delegate to the sweeper
 * contract of the hot wallet in the batch that sweeps them; one transaction of the gas tank moves
 * them all; a later batch needs no authorisation; nothing is topped up, no ETH is left anywhere.
 */
const network = "USDT-ERC20";
const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX) as Hex;
const gasTank = wallet.address(network, "sandbox", GAS_TANK_INDEX) as Hex;
let node: AnvilNode;
let token: Hex;
let database: Database;
let merchantId: string;
let writer: EvmChainWriter;

beforeAll(async () => {
  [node, database] = await Promise.all([startAnvil(["--hardfork", "prague"]), openTestDatabase()]);
  token = await deployTestUsdt(node);
  merchantId = (
    await createMerchantWithKeys(database.db, { email: "batch@example.com", companyName: "Batch Co" })
  ).id;
  writer = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
  await node.testClient.setBalance({ address: gasTank, value: 10n ** 18n });
}, 60_000);

afterAll(async () => {
  await database?.close();
  await node?.stop();
});

async function deposit(db: Db, i: number, amount: bigint): Promise<Hex> {
  const receipt = await mintTestUsdt(node, token, wallet.address(network, "sandbox", 100 + i) as Hex, amount);
  return db.transaction().execute(async (trx) => {
    const { address } = await confirmedDepositIn(trx, {
      deriver: wallet,
      merchantId,
      network,
      i,
      amount,
      txHash: receipt.transactionHash,
    });
    return address as Hex;
  });
}

/** A second deposit to an address (handed off after its last look). */
async function redeposit(address: Hex, i: number, amount: bigint): Promise<void> {
  const r = await mintTestUsdt(node, token, address, amount);
  await database.db
    .insertInto("chain_observations")
    .values({
      id: `obs_again_${i}_${r.transactionHash}`,
      network,
      environment: "sandbox",
      address,
      from_address: address,
      tx_hash: r.transactionHash,
      log_index: 0,
      block_number: 1,
      block_hash: "0x00",
      amount,
      status: "handed_off",
      handed_off_at: new Date(Date.now() + 1_000),
    })
    .execute();
}

function parts() {
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
    batch: {},
  });
  const sender = makeSender({ db: database.db, network, writer, outcomes });
  return { sweeper, sender };
}

describe("batched EIP-7702 sweeps on anvil", () => {
  it("deploys the sweeper, authorises and sweeps 12 addresses in one batch, then sweeps them again without authorisations", async () => {
    const { sweeper, sender } = parts();
    const addresses: Hex[] = [];
    const amounts: bigint[] = [];
    for (let i = 0; i < 12; i++) {
      amounts.push(USDT(20 + i));
      addresses.push(await deposit(database.db, i, amounts[i]!));
    }
    expect(await sweeper.tick()).toBe(12);
    expect(await sender.drain(60_000)).toBe(0);
    const rows = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .orderBy("created_at")
      .execute();
    expect(rows.filter((r) => r.kind === "gas_topup")).toHaveLength(0);
    const deploys = rows.filter((r) => r.kind === "sweeper_deploy");
    const batches = rows.filter((r) => r.kind === "sweep_batch");
    const sweeps = rows.filter((r) => r.kind === "sweep");
    expect(deploys.map((d) => d.status)).toEqual(["confirmed"]);
    expect(batches.map((b) => b.status)).toEqual(["confirmed"]);
    expect(batches[0]!.after_intent_id).toBe(deploys[0]!.intent_id);
    expect(sweeps).toHaveLength(12);
    for (const s of sweeps) {
      expect(s.status).toBe("confirmed");
      expect(s.carrier_intent_id).toBe(batches[0]!.intent_id);
      // The sweep's transaction is its batch's.
      expect(s.tx_hash).toBe(batches[0]!.tx_hash);
    }
    const sweeperAt = sweeperAddress(hot);
    for (const [i, a] of addresses.entries()) {
      expect(await writer.tokenBalance(a)).toBe(0n);
      expect(await writer.nativeBalance(a)).toBe(0n);
      expect((await node.publicClient.getCode({ address: a }))?.toLowerCase()).toBe(
        delegationCode(sweeperAt),
      );
      expect(amounts[i]).toBeGreaterThan(0n);
    }
    expect(await writer.tokenBalance(hot)).toBe(amounts.reduce((s, a) => s + a, 0n));
    const first = await node.publicClient.getTransactionReceipt({ hash: batches[0]!.tx_hash as Hex });
    const tx = await node.publicClient.getTransaction({ hash: batches[0]!.tx_hash as Hex });
    expect(tx.type).toBe("eip7702");
    expect(tx.authorizationList).toHaveLength(12);
    expect(first.from.toLowerCase()).toBe(gasTank.toLowerCase());
    // The batch's cost is in the books, on the carrier.
    expect(BigInt(batches[0]!.fee_paid!)).toBe(first.gasUsed * first.effectiveGasPrice);

    // Again: new deposits to the same addresses; they are delegated already.
    for (let i = 0; i < 12; i++) await redeposit(addresses[i]!, i, USDT(11));
    expect(await sweeper.tick()).toBe(12);
    expect(await sender.drain(60_000)).toBe(0);
    const second = (
      await database.db
        .selectFrom("outgoing_transfers")
        .selectAll()
        .where("kind", "=", "sweep_batch")
        .orderBy("created_at")
        .execute()
    )[1]!;
    expect(second.status).toBe("confirmed");
    const tx2 = await node.publicClient.getTransaction({ hash: second.tx_hash as Hex });
    expect(tx2.type).toBe("eip1559");
    const r2 = await node.publicClient.getTransactionReceipt({ hash: second.tx_hash as Hex });
    console.log(
      `batch of 12: ${first.gasUsed} gas with authorisations (${first.gasUsed / 12n} per address), ${r2.gasUsed} without (${r2.gasUsed / 12n} per address)`,
    );
    for (const a of addresses) {
      expect(await writer.tokenBalance(a)).toBe(0n);
      expect(await writer.nativeBalance(a)).toBe(0n);
    }
    // Only one deployment, ever.
    expect(
      await database.db
        .selectFrom("outgoing_transfers")
        .select("intent_id")
        .where("kind", "=", "sweeper_deploy")
        .execute(),
    ).toHaveLength(1);
  }, 180_000);
});
