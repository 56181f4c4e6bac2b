import { bytesToHex, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import { delegationCode, sweeperAddress } from "../../src/chains/evm/sweeper.js";
import { parseConfig } from "../../src/config/config.js";
import type { Database, Db } from "../../src/db/database.js";
import { systemClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { transferCosts } from "../../src/sender/costs.js";
import { requestTransfer } from "../../src/sender/intents.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { PrivateKeyDeriver } from "../../src/wallet/private-key-deriver.js";
import { logger, MNEMONIC, makeSender, USDT, wallet } from "../sender/support.js";
import {
  type AnvilNode,
  deployTestUsdt,
  freezeAddress,
  mintTestUsdt,
  startAnvil,
  TEST_USDT,
  unfreezeAddress,
} from "../support/chain/anvil.js";
import { openTestDatabase } from "../support/db.js";
import { deposit as depositAt, type EvmDeposits, redeposit as redepositTo } from "../support/evm-deposits.js";

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

const deposits = (): EvmDeposits => ({ db: database.db, node, token, deriver: wallet, merchantId, network });
const deposit = async (_db: Db, i: number, amount: bigint) =>
  (await depositAt(deposits(), i, amount)).address;
const redeposit = (address: Hex, i: number, amount: bigint) =>
  redepositTo(deposits(), address, String(i), amount);

/** The sweeper (batched unless `batch: false`) and the sender of this file's chain. */
function parts(o: { batch?: boolean; fault?: () => void } = {}) {
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
    ...(o.batch === false ? {} : { batch: {} }),
    ...(o.fault ? { fault: o.fault } : {}),
  });
  const sender = makeSender({ db: database.db, network, writer, outcomes });
  return { sweeper, sender };
}

describe("SWEEP_EIP7702_<NETWORK>", () => {
  it("is on by default on every EVM network, off on TRON; true on a network without EIP-7702 is a named problem", () => {
    const c = parseConfig({});
    for (const n of ["ERC20", "BEP20", "POLYGON", "ARBITRUM", "BASE"])
      expect(c.chains.networks[n]!.sweepBatch, n).toBe(true);
    expect(c.chains.networks.TRC20!.sweepBatch).toBe(false);
    expect(parseConfig({ SWEEP_EIP7702_ERC20: "false" }).chains.networks.ERC20!.sweepBatch).toBe(false);
    const problems = (env: Record<string, string>) => {
      try {
        parseConfig(env);
        return [];
      } catch (err) {
        return (err as { problems: { variable: string }[] }).problems.map((p) => p.variable);
      }
    };
    expect(problems({ SWEEP_EIP7702_TRC20: "true" })).toEqual(["SWEEP_EIP7702_TRC20"]);
    expect(problems({ SWEEP_EIP7702_ERC20: "yes" })).toEqual(["SWEEP_EIP7702_ERC20"]);
  });
});

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
    const sweeperAt = sweeperAddress(hot, token);
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

  it("a frozen address of a batch: its sweep fails and it is looked at again, the others are swept; the batch's gas is the collection's cost", async () => {
    const { sweeper, sender } = parts();
    const addresses: Hex[] = [];
    for (let i = 20; i < 24; i++) addresses.push(await deposit(database.db, i, USDT(15)));
    expect(await sweeper.tick()).toBe(4);
    // Frozen by the issuer after its sweep was queued, before the batch is mined.
    await freezeAddress(node, token, addresses[1]!, "tether");
    expect(await sender.drain(60_000)).toBe(0);
    const mine = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("kind", "=", "sweep")
      .where("from_address", "in", addresses)
      .execute();
    expect(mine).toHaveLength(4);
    const frozen = mine.find((r) => r.from_address === addresses[1]);
    expect(frozen?.status).toBe("failed");
    expect(frozen?.reason).toMatch(/without its Transfer/);
    for (const r of mine.filter((m) => m !== frozen)) expect(r.status).toBe("confirmed");
    expect(await writer.tokenBalance(addresses[1]!)).toBe(USDT(15));
    for (const a of [addresses[0]!, addresses[2]!, addresses[3]!])
      expect(await writer.tokenBalance(a)).toBe(0n);
    // Its address is looked at again once unfrozen, and swept in a batch of its own.
    const checks = await database.db
      .selectFrom("sweep_checks")
      .select("address")
      .where("address", "=", addresses[1]!)
      .execute();
    expect(checks).toEqual([]);
    await unfreezeAddress(node, token, addresses[1]!, "tether");
    expect(await sweeper.tick()).toBe(1);
    expect(await sender.drain(60_000)).toBe(0);
    expect(await writer.tokenBalance(addresses[1]!)).toBe(0n);

    // Costs in the books: the batches' and the deployment's gas, per swept deposit.
    const rows = await transferCosts(database.db, new Date(Date.now() - 3_600_000));
    const collection = rows.find((r) => r.network === network && r.purpose === "collection");
    const paid = await database.db
      .selectFrom("outgoing_transfers")
      .select(["fee_paid", "kind"])
      .where("kind", "in", ["sweep_batch", "sweeper_deploy"])
      .execute();
    expect(paid.every((p) => p.fee_paid !== null && BigInt(p.fee_paid) > 0n)).toBe(true);
    expect(collection?.fee).toBe(paid.reduce((s, p) => s + BigInt(p.fee_paid!), 0n));
    const confirmedSweeps = await database.db
      .selectFrom("outgoing_transfers")
      .select("intent_id")
      .where("kind", "=", "sweep")
      .where("status", "=", "confirmed")
      .execute();
    expect(collection?.served).toBe(confirmedSweeps.length);
  }, 180_000);

  it("an address delegated to the sweeper of a former hot wallet is authorised again, to the current one", async () => {
    const { sweeper, sender } = parts();
    const address = await deposit(database.db, 30, USDT(40));
    const former = sweeperAddress("0x2222222222222222222222222222222222222222", token);
    await node.testClient.setCode({ address, bytecode: delegationCode(former) });
    expect(await sweeper.tick()).toBe(1);
    expect(await sender.drain(60_000)).toBe(0);
    const sweep = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("kind", "=", "sweep")
      .where("from_address", "=", address)
      .executeTakeFirstOrThrow();
    expect(sweep.status).toBe("confirmed");
    const tx = await node.publicClient.getTransaction({ hash: sweep.tx_hash as Hex });
    expect(tx.authorizationList).toHaveLength(1);
    expect((await node.publicClient.getCode({ address }))?.toLowerCase()).toBe(
      delegationCode(sweeperAddress(hot, token)),
    );
    expect(await writer.tokenBalance(address)).toBe(0n);
    expect(await writer.tokenBalance(hot)).toBeGreaterThan(0n);
  }, 120_000);

  it("a delegated address still takes a gas top-up and signs its own transfer (a held deposit's return, issue #40)", async () => {
    const { sweeper, sender } = parts();
    const address = await deposit(database.db, 40, USDT(25));
    expect(await sweeper.tick()).toBe(1);
    expect(await sender.drain(60_000)).toBe(0);
    expect((await node.publicClient.getCode({ address }))?.toLowerCase()).toBe(
      delegationCode(sweeperAddress(hot, token)),
    );
    // A deposit whose sender is refused arrives later and is to be returned from the address itself.
    await mintTestUsdt(node, token, address, USDT(7));
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "gas_return_40",
        kind: "gas_topup",
        network,
        environment: "sandbox",
        asset: "native",
        fromIndex: GAS_TANK_INDEX,
        to: address,
        amount: 10n ** 15n,
      }),
    );
    expect(await sender.drain(60_000)).toBe(0);
    const topUp = await database.db
      .selectFrom("outgoing_transfers")
      .select(["status", "reason"])
      .where("intent_id", "=", "gas_return_40")
      .executeTakeFirstOrThrow();
    expect(topUp).toEqual({ status: "confirmed", reason: null });
    expect(await writer.nativeBalance(address)).toBe(10n ** 15n);
    // The deposit key signs an ordinary transaction from its delegated address.
    const index = Number(
      (
        await database.db
          .selectFrom("watched_addresses")
          .select("derivation_index")
          .where("address", "=", address)
          .executeTakeFirstOrThrow()
      ).derivation_index,
    );
    const key = PrivateKeyDeriver.fromMnemonic(MNEMONIC).privateKey(network, "sandbox", index);
    const owner = createWalletClient({
      account: privateKeyToAccount(bytesToHex(key)),
      chain: foundry,
      transport: http(node.rpcUrl),
    });
    const back = "0x3333333333333333333333333333333333333333" as Hex;
    const hash = await owner.writeContract({
      address: token,
      abi: TEST_USDT.abi,
      functionName: "transfer",
      args: [back, USDT(7)],
    });
    expect((await node.publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    expect(await writer.tokenBalance(back)).toBe(USDT(7));
  }, 120_000);

  it("SWEEP_EIP7702 turned off after a crash left carried sweeps without a batch: they fail and the address is swept with a top-up", async () => {
    const address = await deposit(database.db, 50, USDT(41));
    const crashing = parts({
      fault: () => {
        throw new Error("crash before the batch");
      },
    }).sweeper;
    await expect(crashing.tick()).rejects.toThrow("crash before the batch");
    const stranded = await database.db
      .selectFrom("outgoing_transfers")
      .select(["intent_id", "status", "carrier_intent_id"])
      .where("kind", "=", "sweep")
      .where("status", "=", "queued")
      .execute();
    expect(stranded).toHaveLength(1);
    expect(stranded[0]!.carrier_intent_id).toBeNull();
    const { sweeper: plain, sender } = parts({ batch: false });
    expect(await plain.tick()).toBe(1);
    expect(await sender.drain(60_000)).toBe(0);
    const failed = await database.db
      .selectFrom("outgoing_transfers")
      .select(["status", "reason"])
      .where("intent_id", "=", stranded[0]!.intent_id)
      .executeTakeFirstOrThrow();
    expect(failed.status).toBe("failed");
    expect(failed.reason).toMatch(/batched sweeps are off/);
    expect(await writer.tokenBalance(address)).toBe(0n);
    const topUp = await database.db
      .selectFrom("outgoing_transfers")
      .select("status")
      .where("kind", "=", "gas_topup")
      .where("to_address", "=", address)
      .execute();
    expect(topUp.map((t) => t.status)).toEqual(["confirmed"]);
  }, 120_000);
});
