import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChainUnavailableError } from "../../src/chains/errors.js";
import { EvmChainAdapter } from "../../src/chains/evm/evm-adapter.js";
import { type Disagreement, ProviderPool } from "../../src/chains/provider-pool.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";

// Issue #34, from the outside review of its provider cross-check: one provider could make the
// watcher skip a paid block for good. An empty answer to a range needed no second word, so a
// provider that leaves a transfer out (or is asked first because it made the honest ones look
// "lagging" with a head of its own invention) decided alone that nothing arrived. Now a range
// counts only when two providers answered it, both ways: a transfer a majority reports is kept,
// and one provider's silence against it is a disagreement; two providers that differ wait.

const PAID = "0x5000000000000000000000000000000000000005" as Hex;
type Json = Record<string, any>;

let anvil: AnvilNode;
let token: Hex;
let hider: RpcProxy;
const honest: RpcProxy[] = [];
const lie = { hide: true, headAhead: 0 };

function onEach(answer: unknown, request: unknown, f: (a: Json, r: Json) => void) {
  if (Array.isArray(answer) && Array.isArray(request)) {
    for (const [i, a] of answer.entries()) f(a, request[i]);
  } else if (answer && request) f(answer as Json, request as Json);
  return answer;
}

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  hider = await startRpcProxy(anvil.rpcUrl);
  for (let i = 0; i < 2; i++) honest.push(await startRpcProxy(anvil.rpcUrl));
  hider.rewriteResponse = (answer, request) =>
    onEach(answer, request, (a, r) => {
      if (r.method === "eth_getLogs" && lie.hide && Array.isArray(a.result)) a.result = [];
      if (r.method === "eth_blockNumber" && lie.headAhead > 0 && typeof a.result === "string")
        a.result = `0x${(Number(a.result) + lie.headAhead).toString(16)}`;
    });
}, 60_000);

afterAll(async () => {
  for (const p of [hider, ...honest]) await p?.stop();
  await anvil?.stop();
});

/** The hider first (the provider asked first), then `n - 1` honest ones. */
function pooled(n: 2 | 3) {
  const events: Disagreement[] = [];
  const pool = new ProviderPool(
    "USDT-ERC20",
    [hider, ...honest.slice(0, n - 1)].map((p, i) => ({
      name: `p${i + 1}`,
      adapter: new EvmChainAdapter({ rpcUrl: p.url, tokenAddress: token }),
    })),
    { onDisagreement: (e) => events.push(e) },
  );
  return { pool, events };
}

describe("a provider that hides a payment", () => {
  let block: number;
  beforeAll(async () => {
    const receipt = await mintTestUsdt(anvil, token, PAID, 25_000_000n);
    block = Number(receipt.blockNumber);
    await mineBlocks(anvil, 3);
  });

  it("three providers: the payment is kept on the honest two's word and the hider is set aside", async () => {
    const { pool, events } = pooled(3);
    const transfers = await pool.tokenTransfers({ fromBlock: block, toBlock: block });
    expect(transfers.map((t) => [t.to.toLowerCase(), t.amount])).toEqual([[PAID.toLowerCase(), 25_000_000n]]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ provider: "p1", subject: "transfers" });
    expect(events[0]?.detail).toMatch(/left out 1/);
    expect(pool.health()[0]?.condition).toBe("suspect");
  });

  it("two providers that differ: the range waits, and nobody is blamed on one word against one", async () => {
    const { pool, events } = pooled(2);
    await expect(pool.tokenTransfers({ fromBlock: block, toBlock: block })).rejects.toBeInstanceOf(
      ChainUnavailableError,
    );
    expect(events).toEqual([]);
    expect(pool.health().map((h) => h.condition)).toEqual(["ok", "ok"]);
  });

  it("an empty range needs two words too: with one provider answering for it, it waits", async () => {
    const { pool } = pooled(2);
    lie.hide = false;
    try {
      // Both answer (nothing there): decided. Then the honest one is down: one word is not enough.
      const head = Number(await anvil.publicClient.getBlockNumber());
      expect(await pool.tokenTransfers({ fromBlock: head, toBlock: head })).toEqual([]);
      honest[0]!.mode = "error";
      await expect(pool.tokenTransfers({ fromBlock: head, toBlock: head })).rejects.toBeInstanceOf(
        ChainUnavailableError,
      );
    } finally {
      honest[0]!.mode = "pass";
      lie.hide = true;
    }
  });

  it("a head invented 50 blocks ahead does not make the honest providers 'lagging'", async () => {
    const { pool } = pooled(3);
    lie.headAhead = 50;
    try {
      await pool.probe();
      expect(pool.health().map((h) => h.condition)).toEqual(["ok", "ok", "ok"]);
    } finally {
      lie.headAhead = 0;
    }
  });
});
