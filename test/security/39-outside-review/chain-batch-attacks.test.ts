import { createWalletClient, type Hex, http, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvmChainAdapter } from "../../../src/chains/evm/evm-adapter.js";
import { EvmChainWriter } from "../../../src/chains/evm/evm-writer.js";
import {
  CREATE2_DEPLOYER,
  delegationCode,
  sweeperAddress,
  sweeperDeployData,
} from "../../../src/chains/evm/sweeper.js";
import { PooledChainWriter } from "../../../src/chains/pooled-writer.js";
import { ProviderPool } from "../../../src/chains/provider-pool.js";
import type { Database, Db } from "../../../src/db/database.js";
import { systemClock } from "../../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../../src/merchants/index.js";
import { assembleCarrier, requestCarriedSweep } from "../../../src/sender/batches.js";
import { requestTransfer } from "../../../src/sender/intents.js";
import { TransferOutcomes } from "../../../src/sender/outcomes.js";
import { registerSweepOutcomes, Sweeper } from "../../../src/sweep/sweeper.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../../src/wallet/derivation-path.js";
import { localSigner, logger, makeSender, USDT, wallet } from "../../sender/support.js";
import {
  type AnvilNode,
  deployTestToken,
  deployTestUsdt,
  mintTestToken,
  mintTestUsdt,
  startAnvil,
  testUsdtBalance,
} from "../../support/chain/anvil.js";
import { startRpcProxy } from "../../support/chain/rpc-proxy.js";
import { openTestDatabase } from "../../support/db.js";
import {
  deposit as depositAt,
  type EvmDeposits,
  redeposit as redepositTo,
} from "../../support/evm-deposits.js";

/**
 * Outside review of issue #39 (batched EIP-7702 sweeps), on a real chain (anvil, Prague): what the
 * sweeper contract, the writer's `check` and the sweeper/sender pipeline let a customer, a caller of
 * the contract, or a worker-role row writer do. Each test asserts the SAFE behaviour: a failing test
 * is a finding.
 */
const network = "USDT-ERC20" as const;
const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX) as Hex;
const usdcHot = wallet.address("USDC-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;
const gasTank = wallet.address(network, "sandbox", GAS_TANK_INDEX) as Hex;
const SWEEP_ABI = parseAbi(["function sweep(address token, uint256 amount)"]);

let node: AnvilNode;
let token: Hex;
let usdc: Hex;
let database: Database;
let merchantId: string;
let writer: EvmChainWriter;
/** The address of the first test, swept in a batch (delegated to the sweeper afterwards). */
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
let A: Hex;
let indexA: number;
/** The address of the lying-provider test, whose item of its batch was mined without its Transfer to our hot wallet. */
let misdirected: { address: Hex; amount: bigint } | null = null;

beforeAll(async () => {
  [node, database] = await Promise.all([startAnvil(["--hardfork", "prague"]), openTestDatabase()]);
  token = await deployTestUsdt(node);
  usdc = await deployTestToken(node, { symbol: "USDC", decimals: 6 });
  merchantId = (
    await createMerchantWithKeys(database.db, { email: "outside39@example.com", companyName: "O39" })
  ).id;
  writer = new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token });
  await node.testClient.setBalance({ address: gasTank, value: 10n ** 19n });
}, 60_000);

afterAll(async () => {
  await database?.close();
  await node?.stop();
});

const deposits = (): EvmDeposits => ({ db: database.db, node, token, deriver: wallet, merchantId, network });
const deposit = (_db: Db, i: number, amount: bigint) => depositAt(deposits(), i, amount);
const redeposit = (address: Hex, tag: string, amount: bigint) =>
  redepositTo(deposits(), address, tag, amount);

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

const sweepsFrom = (index: number) =>
  database.db
    .selectFrom("outgoing_transfers")
    .selectAll()
    .where("kind", "=", "sweep")
    .where("from_index", "=", index)
    .orderBy("created_at")
    .execute();

describe("outside review #39 on anvil", () => {
  it("withstood: a customer's deposit arriving between the sweep being queued and mined stays at the address", async () => {
    const { sweeper, sender } = parts();
    ({ address: A, index: indexA } = await deposit(database.db, 1, USDT(20)));
    expect(await sweeper.tick()).toBe(1);
    // The customer pays again before the batch is signed and mined.
    await mintTestUsdt(node, token, A, USDT(5));
    expect(await sender.drain(60_000)).toBe(0);
    const [sweep] = await sweepsFrom(indexA);
    expect(sweep?.status).toBe("confirmed");
    expect(await writer.tokenBalance(A)).toBe(USDT(5));
    expect(await writer.tokenBalance(hot)).toBe(USDT(20));
    expect((await node.publicClient.getCode({ address: A }))?.toLowerCase()).toBe(
      delegationCode(sweeperAddress(hot, token)),
    );
  }, 120_000);

  it("another currency type's deposit at a delegated address (USDC on Ethereum at a USDT-ERC20 address) cannot be moved by anyone to USDT-ERC20's hot wallet", async () => {
    // A wrong-network payment: USDC (USDC-ERC20, its own hot wallet) to the USDT-ERC20 address A,
    // which the batch above delegated to the sweeper of USDT-ERC20's hot wallet. Deposit keys are
    // shared by every EVM currency type (one key space), hot wallets are not.
    await mintTestToken(node, usdc, A, USDT(50));
    const attacker = privateKeyToAccount(generatePrivateKey());
    await node.testClient.setBalance({ address: attacker.address, value: 10n ** 18n });
    const client = createWalletClient({ account: attacker, chain: foundry, transport: http(node.rpcUrl) });
    // Anyone may call the delegated account's `sweep` with any token.
    const hash = await client
      .writeContract({
        address: A,
        abi: SWEEP_ABI,
        functionName: "sweep",
        args: [usdc, USDT(50)],
        gas: 200_000n,
      })
      .catch(() => null);
    if (hash) await node.publicClient.waitForTransactionReceipt({ hash });
    // SAFE: the USDC is still at A (for USDC-ERC20's own sweep) or in USDC-ERC20's hot wallet — never in
    // USDT-ERC20's hot wallet, from which the signer sends only USDT (it would be stranded there, and
    // USDC-ERC20's reserves short by it).
    expect(await testUsdtBalance(node, usdc, hot), "USDC moved into USDT-ERC20's hot wallet").toBe(0n);
    expect((await testUsdtBalance(node, usdc, A)) + (await testUsdtBalance(node, usdc, usdcHot))).toBe(
      USDT(50),
    );
  }, 60_000);

  it("forged duplicate carried rows: one Transfer never confirms two sweeps", async () => {
    // A holds 5 (the deposit that arrived mid-flight above) and is delegated already. A worker-role
    // row writer queues two carried sweeps of 5 from it in one carrier.
    expect(await writer.tokenBalance(A)).toBe(USDT(5));
    const scope = { network, environment: "sandbox" as const };
    await database.db.transaction().execute(async (trx) => {
      for (const id of ["swp_dup_1", "swp_dup_2"])
        await requestCarriedSweep(trx, {
          intentId: id,
          network,
          environment: "sandbox",
          fromIndex: indexA,
          to: hot,
          amount: USDT(5),
        });
      await assembleCarrier(trx, scope, {
        intentId: "bat_dup",
        hotWallet: hot,
        itemIds: ["swp_dup_1", "swp_dup_2"],
      });
    });
    const { sender } = parts();
    await sender.drain(3_000);
    const rows = await database.db
      .selectFrom("outgoing_transfers")
      .select(["intent_id", "status", "reason", "last_error"])
      .where("intent_id", "in", ["bat_dup", "swp_dup_1", "swp_dup_2"])
      .execute();
    const confirmed = rows.filter((r) => r.intent_id !== "bat_dup" && r.status === "confirmed");
    // The signer refuses the batch (an address listed twice): nothing moves, nothing is confirmed.
    expect(rows.find((r) => r.intent_id === "bat_dup")?.last_error).toMatch(/listed twice/);
    expect(await writer.tokenBalance(A)).toBe(USDT(5));
    expect(confirmed, JSON.stringify(rows)).toEqual([]);
    // And the writer's check: one Transfer of A in a receipt never stands for two items of A.
    const first = await database.db
      .selectFrom("outgoing_transfers")
      .select(["tx_hash", "amount"])
      .where("kind", "=", "sweep")
      .where("from_address", "=", A)
      .where("status", "=", "confirmed")
      .executeTakeFirstOrThrow();
    const item = { from: A, amount: BigInt(first.amount) };
    const check = await writer.check(first.tx_hash!, {
      asset: "token",
      from: gasTank,
      to: hot,
      amount: 2n * item.amount,
      batch: [item, item],
    });
    expect(check).toMatchObject({ state: "success", delivered: [true, false] });
    // The forged rows are taken out (as an operator would), so that A is looked at again below.
    await database.db
      .updateTable("outgoing_transfers")
      .set({ status: "failed", reason: "forged", finished_at: new Date() })
      .where("intent_id", "in", ["bat_dup", "swp_dup_1", "swp_dup_2"])
      .execute();
  }, 90_000);

  it('one lying provider\'s eth_getCode ("already delegated") never sends a deposit to another hot wallet', async () => {
    // Docs: "Which addresses need one is read from one provider: a wrong answer costs an authorisation
    // too many or leaves an address unswept this time, never funds." Here E is delegated to the
    // sweeper of USDC-ERC20's hot wallet (a USDC-ERC20 batch swept a wrong-network USDC payment there;
    // same key space, same chain), and the first provider says it is delegated to ours.
    const deployer = privateKeyToAccount(generatePrivateKey());
    await node.testClient.setBalance({ address: deployer.address, value: 10n ** 18n });
    const client = createWalletClient({ account: deployer, chain: foundry, transport: http(node.rpcUrl) });
    const dh = await client.sendTransaction({
      to: CREATE2_DEPLOYER,
      data: sweeperDeployData(usdcHot, usdc),
      gas: 1_000_000n,
    });
    await node.publicClient.waitForTransactionReceipt({ hash: dh });
    expect(await node.publicClient.getCode({ address: sweeperAddress(usdcHot, usdc) })).not.toBe(undefined);
    const { address: E } = await deposit(database.db, 3, USDT(25));
    await node.testClient.setCode({ address: E, bytecode: delegationCode(sweeperAddress(usdcHot, usdc)) });

    const liar = await startRpcProxy(node.rpcUrl);
    const honest = [await startRpcProxy(node.rpcUrl), await startRpcProxy(node.rpcUrl)];
    liar.rewriteResponse = (answer, req) => {
      const one = (a: Record<string, any>, r: Record<string, any>) => {
        if (r?.method === "eth_getCode" && String(r.params?.[0]).toLowerCase() === E.toLowerCase())
          a.result = delegationCode(sweeperAddress(hot, token));
      };
      if (Array.isArray(answer) && Array.isArray(req)) for (const [i, a] of answer.entries()) one(a, req[i]);
      else if (answer && req) one(answer as Record<string, any>, req as Record<string, any>);
      return answer;
    };
    try {
      const urls = [liar, ...honest].map((p) => p.url);
      const pool = new ProviderPool(
        network,
        urls.map((rpcUrl, i) => ({
          name: `p${i + 1}`,
          adapter: new EvmChainAdapter({ rpcUrl, tokenAddress: token }),
        })),
      );
      const pooled = new PooledChainWriter(
        pool,
        urls.map((rpcUrl) => new EvmChainWriter({ rpcUrl, tokenAddress: token })),
      );
      const outcomes = new TransferOutcomes();
      registerSweepOutcomes(outcomes);
      const sweeper = new Sweeper({
        db: database.db,
        network,
        environment: "sandbox",
        writer: pooled,
        address: (i) => wallet.address(network, "sandbox", i),
        threshold: USDT(10),
        logger,
        clock: systemClock,
        batch: {},
      });
      const sender = makeSender({
        db: database.db,
        network,
        writer: pooled,
        outcomes,
        signer: localSigner(database.db, token),
      });
      const hotBefore = await writer.tokenBalance(hot);
      expect(await sweeper.tick()).toBe(1);
      await sender.drain(30_000);
      misdirected = { address: E, amount: USDT(25) };
      const usdtAtUsdcHot = await testUsdtBalance(node, token, usdcHot);
      expect(usdtAtUsdcHot, "USDT of USDT-ERC20 moved into USDC-ERC20's hot wallet").toBe(0n);
      expect((await writer.tokenBalance(E)) + (await writer.tokenBalance(hot)) - hotBefore).toBe(USDT(25));
    } finally {
      for (const p of [liar, ...honest]) await p.stop();
    }
  }, 90_000);

  it("withstood: a lying provider that forges the receipt's Transfer of a failed batch item does not get it confirmed", async () => {
    expect(misdirected).not.toBeNull();
    const { address: E, amount } = misdirected!;
    const sweep = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("kind", "=", "sweep")
      .where("from_address", "=", E)
      .executeTakeFirstOrThrow();
    expect(sweep.status).toBe("failed");
    const batch = await database.db
      .selectFrom("outgoing_transfers")
      .selectAll()
      .where("intent_id", "=", sweep.carrier_intent_id!)
      .executeTakeFirstOrThrow();
    const pad = (a: string) => `0x${a.slice(2).toLowerCase().padStart(64, "0")}`;
    const liar = await startRpcProxy(node.rpcUrl);
    const honest = [await startRpcProxy(node.rpcUrl), await startRpcProxy(node.rpcUrl)];
    liar.rewriteResponse = (answer, req) => {
      const one = (a: Record<string, any>, r: Record<string, any>) => {
        // The batch's item failed at the contract (E is delegated to USDC-ERC20's sweeper, which
        // refuses USDT: WrongToken): no Transfer at all. The liar forges one into the receipt.
        if (r?.method === "eth_getTransactionReceipt" && a.result?.logs?.length > 0) {
          const model = a.result.logs[0];
          a.result.logs.push({
            ...model,
            address: token.toLowerCase(),
            topics: [TRANSFER_TOPIC, pad(E), pad(hot)],
            data: `0x${amount.toString(16).padStart(64, "0")}`,
            logIndex: `0x${a.result.logs.length.toString(16)}`,
          });
        }
      };
      if (Array.isArray(answer) && Array.isArray(req)) for (const [i, a] of answer.entries()) one(a, req[i]);
      else if (answer && req) one(answer as Record<string, any>, req as Record<string, any>);
      return answer;
    };
    try {
      const make = (n: number) => {
        const urls = [liar, ...honest].slice(0, n).map((p) => p.url);
        const pool = new ProviderPool(
          network,
          urls.map((rpcUrl, i) => ({
            name: `p${i + 1}`,
            adapter: new EvmChainAdapter({ rpcUrl, tokenAddress: token }),
          })),
        );
        return new PooledChainWriter(
          pool,
          urls.map((rpcUrl) => new EvmChainWriter({ rpcUrl, tokenAddress: token })),
        );
      };
      const expected = {
        asset: "token" as const,
        from: gasTank,
        to: hot,
        amount,
        batch: [{ from: E, amount }],
      };
      // The liar alone says delivered.
      expect(
        await new EvmChainWriter({ rpcUrl: liar.url, tokenAddress: token }).check(batch.tx_hash!, expected),
      ).toMatchObject({ delivered: [true] });
      expect(await make(2).check(batch.tx_hash!, expected)).toMatchObject({ state: "disputed" });
      expect(await make(3).check(batch.tx_hash!, expected)).toMatchObject({
        state: "success",
        delivered: [false],
      });
    } finally {
      for (const p of [liar, ...honest]) await p.stop();
    }
  }, 60_000);

  it("a gas top-up to an address swept in a batch (what a held deposit's return queues first) arrives", async () => {
    // HeldDecisions (issue #40) queues a gas_topup from the gas tank to the deposit address before
    // the return; so does the sweeper with SWEEP_EIP7702=false. (Failed at 5aa14ec/c6e8b6e: the sweeper
    // had no `receive` and the top-up had 21,000 gas; fixed in fc974de.)
    const before = await writer.nativeBalance(A);
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "gas_to_delegated",
        kind: "gas_topup",
        network,
        environment: "sandbox",
        asset: "native",
        fromIndex: GAS_TANK_INDEX,
        to: A,
        amount: 10n ** 15n,
      }),
    );
    const { sender } = parts();
    await sender.drain(30_000);
    const row = await database.db
      .selectFrom("outgoing_transfers")
      .select(["status", "reason"])
      .where("intent_id", "=", "gas_to_delegated")
      .executeTakeFirstOrThrow();
    expect(row, JSON.stringify(row)).toMatchObject({ status: "confirmed" });
    expect(await writer.nativeBalance(A)).toBe(before + 10n ** 15n);
  }, 60_000);

  it("SWEEP_EIP7702=false (documented: keeps the top-up path) still sweeps an address a batch delegated", async () => {
    const { sweeper, sender } = parts({ batch: false });
    await redeposit(A, "toggle", USDT(12));
    // A, and E of the lying-provider test (its failed sweep made it a candidate again).
    expect(await sweeper.tick()).toBeGreaterThanOrEqual(1);
    await sender.drain(30_000);
    const last = (await sweepsFrom(indexA)).at(-1);
    expect(
      await writer.tokenBalance(A),
      `last sweep: ${JSON.stringify({ s: last?.status, r: last?.reason, e: (last as { last_error?: string } | undefined)?.last_error })}`,
    ).toBe(0n);
  }, 90_000);

  it("SWEEP_EIP7702=false after a crash left a carried sweep without a carrier: the address is still swept", async () => {
    const { address: B, index: indexB } = await deposit(database.db, 2, USDT(30));
    const crashing = parts({
      fault: () => {
        throw new Error("crash before assemble");
      },
    });
    await expect(crashing.sweeper.tick()).rejects.toThrow(/crash/);
    const [carried] = await sweepsFrom(indexB);
    expect(carried).toMatchObject({ carried: true, carrier_intent_id: null, status: "queued" });
    // The operator turns batched sweeps off; the address gets another deposit.
    const { sweeper, sender } = parts({ batch: false });
    await redeposit(B, "stranded", USDT(11));
    await sweeper.tick();
    await sender.drain(5_000);
    const rows = await sweepsFrom(indexB);
    expect(
      await writer.tokenBalance(B),
      `sweeps of B: ${JSON.stringify(rows.map((r) => [r.status, r.carried, r.carrier_intent_id]))}`,
    ).toBe(0n);
  }, 90_000);
});
