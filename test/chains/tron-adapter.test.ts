import { TronWeb } from "tronweb";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChainUnavailableError, InvalidAddressError } from "../../src/chains/errors.js";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainAdapter } from "../../src/chains/tron/tron-adapter.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { FIRST_DEPOSIT_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { PrivateKeyDeriver } from "../../src/wallet/private-key-deriver.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const keys = PrivateKeyDeriver.fromMnemonic(MNEMONIC);
const deposit = (i: number) => wallet.address("USDT-TRC20", "sandbox", FIRST_DEPOSIT_INDEX + i);
const hot = wallet.address("USDT-TRC20", "sandbox", HOT_WALLET_INDEX);
const hotKey = Buffer.from(keys.privateKey("USDT-TRC20", "sandbox", HOT_WALLET_INDEX)).toString("hex");
const USDT = (n: number) => BigInt(n) * 1_000_000n;

let node: AnvilNode;
let tokenEvm: Hex;
let emulator: TronEmulator;
let adapter: TronChainAdapter;
let tronWeb: TronWeb;

beforeAll(async () => {
  node = await startAnvil();
  tokenEvm = await deployTestUsdt(node);
  emulator = await startTronEmulator(node, tokenEvm);
  // The hot wallet is an account with TRX for its fees (1 TRX = 10^18 wei on the emulator's anvil):
  // on TRON an address that never received TRX sends nothing.
  await node.testClient.setBalance({ address: tronAddressToEvm(hot) as Hex, value: 100n * 10n ** 18n });
  adapter = new TronChainAdapter({
    apiUrl: emulator.url,
    tokenAddress: emulator.tokenAddress,
    concurrency: 2,
  });
  tronWeb = new TronWeb({ fullHost: emulator.url });
});

afterAll(async () => {
  await emulator?.stop();
  await node?.stop();
});

/** Builds (emulator + tronweb's own check of the answer) an unsigned TRC20 transfer. */
async function buildTransfer(from: string, to: string, amount: bigint) {
  const built = await tronWeb.transactionBuilder.triggerSmartContract(
    emulator.tokenAddress,
    "transfer(address,uint256)",
    { feeLimit: 100_000_000 },
    [
      { type: "address", value: to },
      { type: "uint256", value: amount.toString() },
    ],
    from,
  );
  return built.transaction;
}

/** Builds, signs (tronweb) and broadcasts a TRC20 transfer through the emulator. */
async function tronTransfer(fromKey: string, from: string, to: string, amount: bigint) {
  const signed = await tronWeb.trx.sign(await buildTransfer(from, to, amount), fromKey);
  return tronWeb.trx.sendRawTransaction(signed);
}

describe("TronChainAdapter against the TRON emulator (anvil)", () => {
  it("reads the head, safe block and block hashes", async () => {
    const head = await adapter.headBlock();
    expect(head).toBe(Number(await node.publicClient.getBlockNumber()));
    expect(await adapter.safeBlock(1)).toBe(head);
    await mineBlocks(node, 19);
    expect(await adapter.safeBlock(19)).toBe(head + 1);
    expect(await adapter.safeBlock(head + 100)).toBe(-1);
    const hash = await adapter.blockHash(head);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash!.slice(0, 16)).toBe(head.toString(16).padStart(16, "0"));
    expect(await adapter.blockHash(head + 1000)).toBeNull();
  });

  it("finds TRC20 transfers to derived addresses in a block range, with balances", async () => {
    const start = (await adapter.headBlock()) + 1;
    const a = deposit(0);
    const b = deposit(1);
    const mintA = await mintTestUsdt(node, tokenEvm, tronAddressToEvm(a), USDT(30));
    await mineBlocks(node, 2);
    await mintTestUsdt(node, tokenEvm, tronAddressToEvm(hot), USDT(100));
    // A real TRON-signed transfer (tronweb builds and signs; the emulator verifies and executes).
    const sent = await tronTransfer(hotKey, hot, b, 1_234_567n);
    expect(sent.result).toBe(true);
    const end = await adapter.headBlock();

    const all = await adapter.tokenTransfers({ fromBlock: start, toBlock: end });
    expect(all.map((t) => [t.from, t.to, t.amount])).toEqual([
      ["T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", a, USDT(30)],
      ["T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", hot, USDT(100)],
      [hot, b, 1_234_567n],
    ]);
    const first = all[0]!;
    expect(first.txHash).toBe(mintA.transactionHash.slice(2));
    expect(first.blockNumber).toBe(Number(mintA.blockNumber));
    expect(first.blockHash).toBe(await adapter.blockHash(first.blockNumber));
    expect(all[2]!.txHash).toBe(sent.transaction.txID);

    const toB = await adapter.tokenTransfers({ fromBlock: start, toBlock: end, addresses: [b, deposit(9)] });
    expect(toB).toEqual([all[2]]);
    expect(await adapter.tokenTransfers({ fromBlock: start, toBlock: end, addresses: [] })).toEqual([]);
    expect(await adapter.tokenTransfers({ fromBlock: 0, toBlock: start - 1 })).toEqual([]);

    expect(await adapter.tokenBalance(a)).toBe(USDT(30));
    expect(await adapter.tokenBalance(b)).toBe(1_234_567n);
    expect(await adapter.tokenBalance(hot)).toBe(USDT(100) - 1_234_567n);
    expect(await adapter.tokenBalance(deposit(5))).toBe(0n);
  });

  it("ignores the Transfer logs of a look-alike contract in the same blocks", async () => {
    const fake = await deployTestUsdt(node);
    const start = (await adapter.headBlock()) + 1;
    const real = await mintTestUsdt(node, tokenEvm, tronAddressToEvm(deposit(6)), USDT(2));
    const lookAlike = await mintTestUsdt(node, fake, tronAddressToEvm(deposit(6)), USDT(500));
    const end = await adapter.headBlock();
    // Control: the node reports the look-alike's log in its block's receipts.
    const infos = (await tronWeb.fullNode.request(
      "wallet/gettransactioninfobyblocknum",
      { num: Number(lookAlike.blockNumber) },
      "post",
    )) as { log?: { address: string }[] }[];
    const logAddresses = infos.flatMap((i) => (i.log ?? []).map((l) => l.address.toLowerCase().slice(-40)));
    expect(logAddresses).toContain(fake.toLowerCase().slice(2));
    const found = await adapter.tokenTransfers({ fromBlock: start, toBlock: end, addresses: [deposit(6)] });
    expect(found.map((t) => [t.txHash, t.amount])).toEqual([[real.transactionHash.slice(2), USDT(2)]]);
  });

  it("the emulator rejects a transaction signed by someone else and reports failed transfers", async () => {
    const otherKey = Buffer.from(keys.privateKey("USDT-TRC20", "sandbox", 7)).toString("hex");
    // multisig = true skips tronweb's own owner check, so the emulator's check is what rejects it.
    const forged = await tronWeb.trx.sign(await buildTransfer(hot, deposit(3), 1n), otherKey, true, true);
    const rejected = await tronWeb.trx.sendRawTransaction(forged);
    expect(rejected.result).toBeFalsy();
    expect((rejected as { code?: string }).code).toBe("SIGERROR");
    // raw_data changed after signing (amount raised): txID no longer matches.
    const signed = await tronWeb.trx.sign(await buildTransfer(hot, deposit(3), 1n), hotKey);
    const value = signed.raw_data.contract[0]!.parameter.value as { data: string };
    const tampered = {
      ...signed,
      raw_data_hex: signed.raw_data_hex.replace(value.data.slice(-8), "ffffffff"),
    };
    expect((await tronWeb.trx.sendRawTransaction(tampered)).result).toBeFalsy();
    expect(await adapter.tokenBalance(deposit(3))).toBe(0n);

    // Beyond the balance: mined, but failed on-chain; the adapter reports no transfer for it.
    const start = (await adapter.headBlock()) + 1;
    const tooMuch = await tronTransfer(hotKey, hot, deposit(3), USDT(1_000_000));
    expect(tooMuch.result).toBe(true);
    const info = await tronWeb.trx.getUnconfirmedTransactionInfo(tooMuch.transaction.txID);
    expect(info.receipt.result).toBe("REVERT");
    expect(info.result).toBe("FAILED");
    expect(await adapter.tokenTransfers({ fromBlock: start, toBlock: await adapter.headBlock() })).toEqual(
      [],
    );
    expect(await adapter.tokenBalance(deposit(3))).toBe(0n);
  });

  it("rejects invalid addresses and reports an unreachable endpoint as retryable", async () => {
    await expect(adapter.tokenBalance("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).rejects.toThrow(
      InvalidAddressError,
    );
    expect(adapter.validateAddress(hot)).toBe(true);
    const dead = new TronChainAdapter({ apiUrl: "http://127.0.0.1:1", tokenAddress: emulator.tokenAddress });
    await expect(dead.headBlock()).rejects.toThrow(ChainUnavailableError);
  });
});
