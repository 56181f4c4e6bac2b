import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import { parseConfig } from "../../src/config/config.js";
import type { Database } from "../../src/db/database.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { Sender } from "../../src/sender/sender.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { localSigner, logger, USDT, wallet } from "../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { confirmedDeposit } from "../support/confirmed-deposit.js";
import { openTestDatabase } from "../support/db.js";

// Issue #38, sweep policy per network: a sweep whose own fee is worth more than
// SWEEP_MAX_COST_PERCENT_<NETWORK> of its amount (the fee valued at NATIVE_PRICE_<NETWORK>) is not
// queued; the deposits wait at the address, and a new deposit there makes it a candidate again.

const network = "USDT-TRC20";
const environment = "sandbox";
const address = (i: number) => wallet.address(network, environment, i);
const hot = address(HOT_WALLET_INDEX);
const TRX = (n: number) => BigInt(n) * 1_000_000n;
const WEI_PER_SUN = 10n ** 12n;

let node: AnvilNode;
let token: Hex;
let emulator: TronEmulator;
let writer: TronChainWriter;
let database: Database;
let merchantId: string;

beforeAll(async () => {
  [node, database] = await Promise.all([startAnvil(), openTestDatabase()]);
  token = await deployTestUsdt(node);
  emulator = await startTronEmulator(node, token);
  writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
  merchantId = (await createMerchantWithKeys(database.db, { email: "policy@example.com", companyName: "P" }))
    .id;
  await mintTestUsdt(node, token, tronAddressToEvm(hot) as Hex, USDT(1));
  await node.testClient.setBalance({
    address: tronAddressToEvm(address(GAS_TANK_INDEX)) as Hex,
    value: TRX(1_000) * WEI_PER_SUN,
  });
});

afterAll(async () => {
  await emulator?.stop();
  await node?.stop();
  await database?.close();
});

async function deposit(i: number, amount: bigint, txNo: number): Promise<void> {
  const receipt = await mintTestUsdt(node, token, tronAddressToEvm(address(100 + i)) as Hex, amount);
  await database.db.transaction().execute(async (trx) => {
    if (txNo === 0)
      await confirmedDeposit(trx, {
        deriver: wallet,
        merchantId,
        network,
        i,
        amount,
        txHash: receipt.transactionHash,
      });
    else {
      // A second deposit to the same address: its observation handed off now.
      await trx
        .insertInto("chain_observations")
        .values({
          id: `obs_again_${i}_${txNo}`,
          network,
          environment,
          address: address(100 + i),
          from_address: address(999),
          tx_hash: receipt.transactionHash,
          log_index: 1,
          block_number: 1,
          block_hash: "0x00",
          amount,
          status: "handed_off",
          handed_off_at: new Date(),
        })
        .execute();
    }
  });
}

describe("sweep policy: the most a sweep's fee may be worth, as a share of its amount", () => {
  it("config: the share and the native coin's price, both or a named problem", () => {
    const c = parseConfig({ SWEEP_MAX_COST_PERCENT_TRC20: "2.5", NATIVE_PRICE_TRC20: "0.25" });
    expect(c.chains.networks.TRC20!.sweepMaxCost).toEqual({ basisPoints: 250, nativePrice: 250_000n });
    expect(c.chains.networks.ERC20!.sweepMaxCost).toBeUndefined();
    const problems = (env: Record<string, string>) => {
      try {
        parseConfig(env);
        return [];
      } catch (err) {
        return (err as { problems: { variable: string }[] }).problems.map((p) => p.variable);
      }
    };
    expect(problems({ SWEEP_MAX_COST_PERCENT_TRC20: "5" })).toEqual(["NATIVE_PRICE_TRC20"]);
    expect(problems({ SWEEP_MAX_COST_PERCENT_TRC20: "0", NATIVE_PRICE_TRC20: "1" })).toEqual([
      "SWEEP_MAX_COST_PERCENT_TRC20",
    ]);
    expect(problems({ SWEEP_MAX_COST_PERCENT_TRC20: "101", NATIVE_PRICE_TRC20: "1" })).toEqual([
      "SWEEP_MAX_COST_PERCENT_TRC20",
    ]);
    expect(problems({ SWEEP_MAX_COST_PERCENT_TRC20: "5", NATIVE_PRICE_TRC20: "0" })).toEqual([
      "NATIVE_PRICE_TRC20",
    ]);
    expect(problems({ SWEEP_MAX_COST_PERCENT_TRC20: "5", NATIVE_PRICE_TRC20: "-1" })).toEqual([
      "NATIVE_PRICE_TRC20",
    ]);
  });

  it("an 11 USDT deposit whose sweep would burn ~13.5 TRX (≈ 3.4 USDT at 0.25) waits under a 5 % cap; 100 USDT more, and the 111 USDT are swept once", async () => {
    const outcomes = new TransferOutcomes();
    registerSweepOutcomes(outcomes);
    const sweeper = new Sweeper({
      db: database.db,
      network,
      environment,
      writer,
      address,
      threshold: USDT(10),
      logger,
      clock: { now: () => Date.now() },
      maxCost: { basisPoints: 500, nativePrice: 250_000n },
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
      clock: { now: () => Date.now() },
      recheckMs: 0,
    });
    await deposit(0, USDT(11), 0);
    const a = address(100);
    expect(await sweeper.tick()).toBe(0);
    // Looked at, nothing queued, and not looked at again until a new deposit.
    expect(await sweeper.tick()).toBe(0);
    const queued = await database.db.selectFrom("outgoing_transfers").select("intent_id").execute();
    expect(queued).toEqual([]);
    expect(await writer.tokenBalance(a)).toBe(USDT(11));
    // 100 USDT more: the fee is now about 3 % of 111 USDT.
    await deposit(0, USDT(100), 1);
    expect(await sweeper.tick()).toBe(1);
    expect(await sender.drain(60_000, 0)).toBe(0);
    expect(await writer.tokenBalance(a)).toBe(0n);
    const sweeps = await database.db
      .selectFrom("outgoing_transfers")
      .select(["amount", "status"])
      .where("kind", "=", "sweep")
      .execute();
    expect(sweeps).toEqual([{ amount: String(USDT(111)), status: "confirmed" }]);
  }, 120_000);
});
