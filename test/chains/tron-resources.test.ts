import { randomBytes } from "node:crypto";
import { TronWeb } from "tronweb";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { WINDOW_MS } from "../support/chain/tron-resources.js";

// Issue #38: the TRON emulator charges what TRON charges. Each charge against the numbers TRON
// documents: a USDT transfer's energy (64,285 to a holder, 130,285 to an address holding none) at
// the energy price; the free daily bandwidth, then 1,000 sun per byte; creating an account by a TRX
// transfer (1 TRX + 0.1 TRX); `OUT_OF_ENERGY` (fails, burns the whole fee limit); staking for energy
// and delegating it (locks included). Real tronweb builds and signs every transaction.

const TRX = 1_000_000n;
const WEI_PER_SUN = 10n ** 12n;

let anvil: AnvilNode;
let token: Hex;
let emulator: TronEmulator;
let tron: TronWeb;

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  emulator = await startTronEmulator(anvil, token);
  tron = new TronWeb({ fullHost: emulator.url });
});

afterAll(async () => {
  await emulator?.stop();
  await anvil?.stop();
});

interface Wallet {
  key: string;
  address: string;
}

/** A fresh key; `trx` given, its account exists with that balance (a genesis account). */
async function wallet(trx?: bigint): Promise<Wallet> {
  const key = randomBytes(32).toString("hex");
  const address = TronWeb.address.fromPrivateKey(key) as string;
  if (trx !== undefined)
    await anvil.testClient.setBalance({ address: evm(address), value: trx * TRX * WEI_PER_SUN });
  return { key, address };
}

const evm = (address: string) => tronAddressToEvm(address) as Hex;

async function sun(address: string): Promise<bigint> {
  return BigInt(await anvil.publicClient.getBalance({ address: evm(address) })) / WEI_PER_SUN;
}

type Unsigned = Parameters<TronWeb["trx"]["sign"]>[0];

async function send(w: Wallet, tx: Unsigned) {
  const signed = await tron.trx.sign(tx, w.key);
  const r = (await tron.trx.sendRawTransaction(signed as never)) as {
    result?: boolean;
    code?: string;
    message?: string;
  };
  const message = r.message ? Buffer.from(r.message, "hex").toString("utf8") : undefined;
  return { ...r, message, txId: (signed as { txID: string }).txID };
}

async function usdtTransfer(from: Wallet, to: string, units: bigint, feeLimit = 100_000_000) {
  const built = await tron.transactionBuilder.triggerSmartContract(
    emulator.tokenAddress,
    "transfer(address,uint256)",
    { feeLimit },
    [
      { type: "address", value: to },
      { type: "uint256", value: units.toString() },
    ],
    from.address,
  );
  return send(from, built.transaction as Unsigned);
}

async function info(txId: string) {
  return (await (
    await fetch(`${emulator.url}/wallet/gettransactioninfobyid`, {
      method: "POST",
      body: JSON.stringify({ value: txId }),
    })
  ).json()) as {
    fee?: number;
    result?: string;
    receipt: {
      energy_usage_total: number;
      energy_fee: number;
      net_usage: number;
      net_fee: number;
      result: string;
    };
  };
}

async function resource(address: string) {
  return (await (
    await fetch(`${emulator.url}/wallet/getaccountresource`, {
      method: "POST",
      body: JSON.stringify({ address: tron.address.toHex(address) }),
    })
  ).json()) as Record<string, number | undefined>;
}

describe("the TRON emulator charges what TRON charges (issue #38)", () => {
  it("a USDT transfer to a holder burns 64,285 energy × the energy price; to an address holding none, 130,285", async () => {
    for (const price of [210, 100]) {
      emulator.setChainParameters({ getEnergyFee: price });
      const from = await wallet(100n);
      await mintTestUsdt(anvil, token, evm(from.address), 50n * TRX);
      const holder = await wallet();
      await mintTestUsdt(anvil, token, evm(holder.address), 1n);
      const before = await sun(from.address);
      const toHolder = await usdtTransfer(from, holder.address, 5n * TRX);
      expect(toHolder.result, toHolder.message).toBe(true);
      const a = await info(toHolder.txId);
      expect(a.receipt).toMatchObject({
        energy_usage_total: 64_285,
        energy_fee: 64_285 * price,
        result: "SUCCESS",
      });
      // Its bandwidth came from the free daily allowance (an existing account's 600 bytes).
      expect(a.receipt.net_fee).toBe(0);
      expect(a.receipt.net_usage).toBeGreaterThan(250);
      expect(a.fee).toBe(64_285 * price);
      expect(await sun(from.address)).toBe(before - 64_285n * BigInt(price));

      const fresh = await wallet();
      const toFresh = await usdtTransfer(from, fresh.address, 5n * TRX);
      const b = await info(toFresh.txId);
      expect(b.receipt).toMatchObject({ energy_usage_total: 130_285, energy_fee: 130_285 * price });
      // The allowance is spent (600 bytes a day): the second transfer's bytes burn 1,000 sun each.
      expect(b.receipt.net_usage).toBe(0);
      expect(b.receipt.net_fee).toBe(a.receipt.net_usage * 1_000);
      expect(b.fee).toBe(130_285 * price + b.receipt.net_fee);
      // The node's dry run reports the same energy (what a wallet prices a transfer by).
      const dry = await tron.transactionBuilder.triggerConstantContract(
        emulator.tokenAddress,
        "transfer(address,uint256)",
        {},
        [
          { type: "address", value: (await wallet()).address },
          { type: "uint256", value: "1" },
        ],
        from.address,
      );
      expect((dry as { energy_used?: number }).energy_used).toBe(130_285);
    }
    emulator.setChainParameters({ getEnergyFee: 210 });
  });

  it("free bandwidth recovers over 24 hours", async () => {
    const from = await wallet(100n);
    await mintTestUsdt(anvil, token, evm(from.address), 50n * TRX);
    const to = (await wallet()).address;
    await usdtTransfer(from, to, 1n);
    expect((await resource(from.address)).freeNetUsed).toBeGreaterThan(250);
    emulator.advanceTime(WINDOW_MS / 2);
    const half = (await resource(from.address)).freeNetUsed ?? 0;
    expect(half).toBeGreaterThan(100);
    expect(half).toBeLessThan(200);
    emulator.advanceTime(WINDOW_MS / 2);
    expect((await resource(from.address)).freeNetUsed).toBeUndefined();
    const again = await usdtTransfer(from, to, 1n);
    expect((await info(again.txId)).receipt.net_fee).toBe(0);
  });

  it("a TRX transfer to a new address creates its account: 1 TRX for the creation, 0.1 TRX for its bandwidth", async () => {
    const tank = await wallet(50n);
    const fresh = await wallet();
    expect(await tron.trx.getAccount(fresh.address)).toEqual({});
    const before = await sun(tank.address);
    const r = await send(
      tank,
      (await tron.transactionBuilder.sendTrx(fresh.address, 2_000_000, tank.address)) as Unsigned,
    );
    expect(r.result, r.message).toBe(true);
    expect(await sun(tank.address)).toBe(before - 2n * TRX - 1_100_000n);
    expect((await info(r.txId)).fee).toBe(1_100_000);
    expect(await tron.trx.getAccount(fresh.address)).toMatchObject({ balance: 2_000_000 });
    // The account exists now: the next transfer to it creates nothing and its bandwidth is free.
    const next = await send(
      tank,
      (await tron.transactionBuilder.sendTrx(fresh.address, 1_000_000, tank.address)) as Unsigned,
    );
    expect((await info(next.txId)).fee).toBe(0);
    // Short of amount + creation: refused by the node, nothing moves.
    const poor = await wallet(1n);
    const refused = await send(
      poor,
      (await tron.transactionBuilder.sendTrx((await wallet()).address, 500_000, poor.address)) as Unsigned,
    );
    expect(refused.result).toBeFalsy();
    expect(refused.message).toMatch(/balance is not sufficient/);
    expect(await sun(poor.address)).toBe(TRX);
  });

  it("an address without an account sends nothing (a fresh deposit address holding only USDT)", async () => {
    const deposit = await wallet();
    await mintTestUsdt(anvil, token, evm(deposit.address), 10n * TRX);
    const r = await usdtTransfer(deposit, (await wallet()).address, 1n);
    expect(r.result).toBeFalsy();
    expect(r.code).toBe("CONTRACT_VALIDATE_ERROR");
    expect(r.message).toMatch(/no OwnerAccount/);
  });

  it("OUT_OF_ENERGY: a fee limit below the energy's cost fails the transfer and still burns the whole limit", async () => {
    const from = await wallet(100n);
    await mintTestUsdt(anvil, token, evm(from.address), 50n * TRX);
    const to = await wallet();
    const before = await sun(from.address);
    const r = await usdtTransfer(from, to.address, 5n * TRX, 10_000_000);
    expect(r.result, r.message).toBe(true); // accepted by the node, failed in the block
    const i = await info(r.txId);
    expect(i.result).toBe("FAILED");
    expect(i.receipt.result).toBe("OUT_OF_ENERGY");
    expect(i.receipt.energy_fee).toBe(10_000_000 - (10_000_000 % 210));
    expect(await sun(from.address)).toBe(before - BigInt(i.fee ?? 0));
    expect(BigInt(i.fee ?? 0)).toBeGreaterThanOrEqual(9_999_000n);
    // Nothing moved.
    expect(
      await anvil.publicClient.readContract({
        address: token,
        abi: [
          {
            name: "balanceOf",
            type: "function",
            stateMutability: "view",
            inputs: [{ type: "address" }],
            outputs: [{ type: "uint256" }],
          },
        ],
        functionName: "balanceOf",
        args: [evm(to.address)],
      }),
    ).toBe(0n);
  });

  it("staked energy pays a transfer without a burn, and recovers over 24 hours", async () => {
    const staker = await wallet(20_000n);
    await mintTestUsdt(anvil, token, evm(staker.address), 50n * TRX);
    const stake = await send(
      staker,
      (await tron.transactionBuilder.freezeBalanceV2(15_000_000_000, "ENERGY", staker.address)) as Unsigned,
    );
    expect(stake.result, stake.message).toBe(true);
    const r = await resource(staker.address);
    // Its share of the network's daily energy: 15,000 TRX of the total staked weight.
    expect(r.EnergyLimit).toBe(
      Math.floor((15_000 * (r.TotalEnergyLimit as number)) / (r.TotalEnergyWeight as number)),
    );
    expect(r.EnergyLimit).toBeGreaterThan(130_285);
    const balance = await sun(staker.address);
    const sent = await usdtTransfer(staker, (await wallet()).address, 1n);
    const i = await info(sent.txId);
    expect(i.receipt).toMatchObject({ energy_usage_total: 130_285, energy_fee: 0 });
    expect(await sun(staker.address)).toBe(balance);
    expect((await resource(staker.address)).EnergyUsed).toBe(130_285);
    emulator.advanceTime(WINDOW_MS);
    expect((await resource(staker.address)).EnergyUsed).toBeUndefined();
  });

  it("delegated energy: only to an existing account; locked, it cannot be taken back before the lock ends", async () => {
    const owner = await wallet(20_000n);
    await send(
      owner,
      (await tron.transactionBuilder.freezeBalanceV2(15_000_000_000, "ENERGY", owner.address)) as Unsigned,
    );
    const deposit = await wallet();
    await mintTestUsdt(anvil, token, evm(deposit.address), 10n * TRX);
    const delegate = async (lock: boolean, period?: number) =>
      send(
        owner,
        (await tron.transactionBuilder.delegateResource(
          15_000_000_000,
          deposit.address,
          "ENERGY",
          owner.address,
          lock,
          period,
        )) as Unsigned,
      );
    const refused = await delegate(false);
    expect(refused.result).toBeFalsy();
    expect(refused.message).toMatch(/does not exist/);

    // Its account created by a TRX transfer: the delegation goes through, locked for 100 blocks.
    await send(
      owner,
      (await tron.transactionBuilder.sendTrx(deposit.address, 1_000_000, owner.address)) as Unsigned,
    );
    const locked = await delegate(true, 100);
    expect(locked.result, locked.message).toBe(true);
    expect((await resource(owner.address)).EnergyLimit).toBeUndefined();
    expect((await resource(deposit.address)).EnergyLimit).toBeGreaterThan(130_285);
    // The deposit address sweeps with the delegated energy: no TRX burned for energy.
    const before = await sun(deposit.address);
    const swept = await usdtTransfer(deposit, (await wallet()).address, 10n * TRX);
    expect((await info(swept.txId)).receipt).toMatchObject({ energy_fee: 0, net_fee: 0 });
    expect(await sun(deposit.address)).toBe(before);

    const undelegate = async () =>
      send(
        owner,
        (await tron.transactionBuilder.undelegateResource(
          15_000_000_000,
          deposit.address,
          "ENERGY",
          owner.address,
        )) as Unsigned,
      );
    const early = await undelegate();
    expect(early.result).toBeFalsy();
    expect(early.message).toMatch(/insufficient delegatedFrozenBalance/);
    emulator.advanceTime(100 * 3_000);
    // 5 minutes later a little of the deposit address's usage has recovered (24 hours for all of it).
    const usedThen = (await resource(deposit.address)).EnergyUsed as number;
    expect(usedThen).toBeLessThan(130_285);
    expect(usedThen).toBeGreaterThan(129_000);
    const back = await undelegate();
    expect(back.result, back.message).toBe(true);
    // The energy the deposit address used came back with the stake.
    expect((await resource(deposit.address)).EnergyLimit).toBeUndefined();
    expect((await resource(owner.address)).EnergyUsed).toBe(usedThen);
  });

  it("reports the chain parameters and a short bandwidth balance is refused at broadcast", async () => {
    const params = (await (
      await fetch(`${emulator.url}/wallet/getchainparameters`, { method: "POST" })
    ).json()) as {
      chainParameter: { key: string; value: number }[];
    };
    expect(Object.fromEntries(params.chainParameter.map((p) => [p.key, p.value]))).toMatchObject({
      getEnergyFee: 210,
      getTransactionFee: 1_000,
      getCreateAccountFee: 100_000,
      getCreateNewAccountFeeInSystemContract: 1_000_000,
      getFreeNetLimit: 600,
    });
    // Without free bandwidth, an account holding 0.1 TRX cannot pay a transaction's bytes (about
    // 270 at 1,000 sun each): refused at broadcast, nothing taken.
    const poor = await wallet();
    await anvil.testClient.setBalance({ address: evm(poor.address), value: 100_000n * WEI_PER_SUN });
    const tank = await wallet(10n);
    emulator.setChainParameters({ getFreeNetLimit: 0 });
    try {
      const r = await send(
        poor,
        (await tron.transactionBuilder.sendTrx(tank.address, 1, poor.address)) as Unsigned,
      );
      expect(r.result).toBeFalsy();
      expect(r.code).toBe("BANDWITH_ERROR");
      expect(await sun(poor.address)).toBe(100_000n);
    } finally {
      emulator.setChainParameters({ getFreeNetLimit: 600 });
    }
  });
});
