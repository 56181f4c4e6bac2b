import type { Hex } from "viem";
import { bytesToHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChainUnavailableError, InvalidAddressError } from "../../src/chains/errors.js";
import { EvmChainAdapter } from "../../src/chains/evm/evm-adapter.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { FIRST_DEPOSIT_INDEX } from "../../src/wallet/derivation-path.js";
import { PrivateKeyDeriver } from "../../src/wallet/private-key-deriver.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
  transferTestUsdt,
} from "../support/chain/anvil.js";
import { startRpcProxy } from "../support/chain/rpc-proxy.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const keys = PrivateKeyDeriver.fromMnemonic(MNEMONIC);
const deposit = (i: number) => wallet.address("USDT-ERC20", "sandbox", FIRST_DEPOSIT_INDEX + i) as Hex;
const USDT = (n: number) => BigInt(n) * 1_000_000n;

let node: AnvilNode;
let token: Hex;
let adapter: EvmChainAdapter;

beforeAll(async () => {
  node = await startAnvil();
  token = await deployTestUsdt(node);
  adapter = new EvmChainAdapter({ rpcUrl: node.rpcUrl, tokenAddress: token, maxBlocksPerQuery: 3 });
});

afterAll(async () => {
  await node?.stop();
});

describe("EvmChainAdapter against anvil", () => {
  it("reads the head, safe block and block hashes", async () => {
    const head = await adapter.headBlock();
    expect(head).toBe(Number(await node.publicClient.getBlockNumber()));
    expect(await adapter.safeBlock(1)).toBe(head);
    expect(await adapter.safeBlock(2)).toBe(head - 1);
    expect(await adapter.safeBlock(head + 1)).toBe(0);
    expect(await adapter.safeBlock(head + 5)).toBe(-1);
    await expect(adapter.safeBlock(0)).rejects.toThrow(RangeError);

    await mineBlocks(node, 12);
    expect(await adapter.headBlock()).toBe(head + 12);
    expect(await adapter.safeBlock(12)).toBe(head + 1);

    const block = await node.publicClient.getBlock({ blockNumber: BigInt(head) });
    expect(await adapter.blockHash(head)).toBe(block.hash);
    expect(await adapter.blockHash(head + 1000)).toBeNull();
  });

  it("finds token transfers to derived addresses in a block range, with balances", async () => {
    const start = (await adapter.headBlock()) + 1;
    const a = deposit(0);
    const b = deposit(1);
    const mintA = await mintTestUsdt(node, token, a, USDT(25));
    await mineBlocks(node, 2);
    const mintB = await mintTestUsdt(node, token, b, 1n); // one base unit
    // A derived deposit address spends: a transfer a -> b signed with the derived private key.
    const keyA = bytesToHex(keys.privateKey("USDT-ERC20", "sandbox", FIRST_DEPOSIT_INDEX));
    const moveAB = await transferTestUsdt(node, token, keyA, b, 2_500_000n);
    const end = await adapter.headBlock();

    const all = await adapter.tokenTransfers({ fromBlock: start, toBlock: end });
    expect(all.map((t) => [t.to, t.amount])).toEqual([
      [a, USDT(25)],
      [b, 1n],
      [b, 2_500_000n],
    ]);
    const first = all[0]!;
    expect(first).toEqual({
      txHash: mintA.transactionHash,
      logIndex: 0,
      blockNumber: Number(mintA.blockNumber),
      blockHash: mintA.blockHash,
      from: "0x0000000000000000000000000000000000000000",
      to: a,
      amount: USDT(25),
    });
    expect(all[2]!.from).toBe(a);
    expect(all[1]!.txHash).toBe(mintB.transactionHash);
    expect(all[2]!.txHash).toBe(moveAB.transactionHash);
    expect(await adapter.blockHash(first.blockNumber)).toBe(first.blockHash);

    // Filtered by a small set (topic filter), any spelling.
    const toB = await adapter.tokenTransfers({
      fromBlock: start,
      toBlock: end,
      addresses: [b.toLowerCase()],
    });
    expect(toB.map((t) => t.amount)).toEqual([1n, 2_500_000n]);
    // Filtered in memory (more addresses than the topic threshold).
    const many = new EvmChainAdapter({ rpcUrl: node.rpcUrl, tokenAddress: token, maxTopicAddresses: 1 });
    const toAOrB = await many.tokenTransfers({ fromBlock: start, toBlock: end, addresses: new Set([a, b]) });
    expect(toAOrB).toEqual(all);
    expect(await many.tokenTransfers({ fromBlock: start, toBlock: end, addresses: [deposit(2)] })).toEqual(
      [],
    );
    expect(await adapter.tokenTransfers({ fromBlock: start, toBlock: end, addresses: [] })).toEqual([]);
    // A range before the transfers.
    expect(await adapter.tokenTransfers({ fromBlock: 0, toBlock: start - 1 })).toEqual([]);

    expect(await adapter.tokenBalance(a)).toBe(USDT(25) - 2_500_000n);
    expect(await adapter.tokenBalance(b)).toBe(2_500_001n);
    expect(await adapter.tokenBalance(deposit(3))).toBe(0n);
  });

  it("ignores Transfer logs of another contract even when the provider returns them", async () => {
    // A provider that drops the address filter of eth_getLogs returns every contract's Transfer
    // events; a look-alike token's transfer to a deposit address must not become a deposit.
    const proxy = await startRpcProxy(node.rpcUrl);
    try {
      const fake = await deployTestUsdt(node);
      const start = (await adapter.headBlock()) + 1;
      const real = await mintTestUsdt(node, token, deposit(5), USDT(3));
      await mintTestUsdt(node, fake, deposit(5), USDT(1_000));
      const end = await adapter.headBlock();
      const dropAddress = (req: unknown): unknown => {
        if (Array.isArray(req)) return req.map(dropAddress);
        const r = req as { method?: string; params?: Record<string, unknown>[] };
        if (r.method !== "eth_getLogs" || !r.params?.[0]) return req;
        const { address: _dropped, ...filter } = r.params[0];
        return { ...r, params: [filter, ...r.params.slice(1)] };
      };
      proxy.rewrite = dropAddress;
      const viaProxy = new EvmChainAdapter({ rpcUrl: proxy.url, tokenAddress: token });
      // Control: the provider really returns the look-alike's log.
      const raw = await node.publicClient.getLogs({ fromBlock: BigInt(start), toBlock: BigInt(end) });
      expect(raw.some((l) => l.address.toLowerCase() === fake.toLowerCase())).toBe(true);
      const found = await viaProxy.tokenTransfers({
        fromBlock: start,
        toBlock: end,
        addresses: [deposit(5)],
      });
      expect(found.map((t) => [t.txHash, t.amount])).toEqual([[real.transactionHash, USDT(3)]]);
      const all = await viaProxy.tokenTransfers({ fromBlock: start, toBlock: end });
      expect(all.map((t) => t.amount)).toEqual([USDT(3)]);
    } finally {
      await proxy.stop();
    }
  });

  it("rejects invalid addresses and reports an unreachable endpoint as retryable", async () => {
    await expect(adapter.tokenBalance("0x1234")).rejects.toThrow(InvalidAddressError);
    expect(adapter.validateAddress("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).toBe(true);
    expect(adapter.normalizeAddress("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266")).toBe(
      "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    );
    const dead = new EvmChainAdapter({ rpcUrl: "http://127.0.0.1:1", tokenAddress: token, timeoutMs: 2000 });
    const err = await dead.headBlock().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainUnavailableError);
    expect((err as ChainUnavailableError).retryable).toBe(true);
  });
});
