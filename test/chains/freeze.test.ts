import { createWalletClient, type Hex, http, pad, parseEventLogs, toBytes, toFunctionSelector } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChainAdapter } from "../../src/chains/adapter.js";
import { ChainUnavailableError } from "../../src/chains/errors.js";
import { EvmChainAdapter } from "../../src/chains/evm/evm-adapter.js";
import { ProviderPool } from "../../src/chains/provider-pool.js";
import { tronAddressFromBytes } from "../../src/chains/tron/address.js";
import { TronChainAdapter } from "../../src/chains/tron/tron-adapter.js";
import type { CurrencyType, FreezeKind } from "../../src/domain/currency.js";
import {
  ANVIL_DEPLOYER_KEY,
  type AnvilNode,
  deployTestToken,
  deployTestUsdt,
  destroyFrozenFunds,
  freezeAddress,
  mintTestToken,
  startAnvil,
  TEST_TOKEN,
  TEST_USDT,
  testUsdtBalance,
  transferTestToken,
  unfreezeAddress,
} from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";

// Issue #40 "frozen funds": `isFrozen` of each chain adapter against tokens that freeze as their
// issuers' do — TestUSDT as Tether's original contract (`tether`: USDT-ERC20, USDT-TRC20), TestToken
// as Circle's FiatToken (`usdc`) and as Tether's USDT0 (`tether-blocked`: USDT-ARBITRUM) — on anvil
// and through the TRON emulator; the transfer semantics the gateway relies on; a registry kind that
// does not match the contract is a fault, never "not frozen"; a provider pool is frozen on one word.

let node: AnvilNode;
/** The tokens, by freeze kind (`none`: a Binance-Peg-like TestToken without freeze). */
const tokens = {} as Record<FreezeKind, Hex>;

const USDT = (n: number) => BigInt(n) * 1_000_000n;

/** A fresh account: its key (to send from it) and address. */
function account() {
  const key = generatePrivateKey();
  return { key, address: privateKeyToAccount(key).address };
}

const evmAdapter = (
  kind: FreezeKind,
  options: { network?: CurrencyType; freeze?: FreezeKind; rpcUrl?: string } = {},
) =>
  new EvmChainAdapter({
    rpcUrl: options.rpcUrl ?? node.rpcUrl,
    tokenAddress: tokens[kind],
    ...(options.network ? { network: options.network } : {}),
    ...(options.freeze ? { freeze: options.freeze } : {}),
  });

const totalSupply = (token: Hex, kind: FreezeKind) =>
  node.publicClient.readContract({
    address: token,
    abi: kind === "tether" ? TEST_USDT.abi : TEST_TOKEN.abi,
    functionName: "totalSupply",
  }) as Promise<bigint>;

beforeAll(async () => {
  node = await startAnvil();
  tokens.tether = await deployTestUsdt(node);
  tokens.usdc = await deployTestToken(node, { symbol: "USDC", decimals: 6 });
  tokens["tether-blocked"] = await deployTestToken(node, {
    name: "USD₮0",
    symbol: "USDT",
    decimals: 6,
    freeze: "tether-blocked",
  });
  tokens.none = await deployTestToken(node, { symbol: "USDT", decimals: 18 });
}, 60_000);

afterAll(async () => {
  await node?.stop();
});

/** Each kind with a freeze function: the network it stands for, whose registry kind it is. */
const KINDS = [
  { kind: "tether", network: "USDT-ERC20", events: ["AddedBlackList", "RemovedBlackList"] },
  { kind: "usdc", network: "USDC-ERC20", events: ["Blacklisted", "UnBlacklisted"] },
  { kind: "tether-blocked", network: "USDT-ARBITRUM", events: ["BlockPlaced", "BlockReleased"] },
] as const;

describe.each(KINDS)("EvmChainAdapter.isFrozen, $kind ($network)", ({ kind, network, events }) => {
  const abi = () => (kind === "tether" ? TEST_USDT.abi : TEST_TOKEN.abi);

  it("is false before the freeze, true after it, false again once released", async () => {
    const adapter = evmAdapter(kind, { network });
    const frozen = account().address;
    const other = account().address;
    expect(await adapter.isFrozen(frozen)).toBe(false);

    const placed = await freezeAddress(node, tokens[kind], frozen, kind);
    expect(parseEventLogs({ abi: abi(), logs: placed.logs })[0]?.eventName).toBe(events[0]);
    // The frozen account: an indexed topic of USDT0's and Circle's events; the data of Tether's
    // original ones (as its deployed contract declares them, not indexed).
    if (kind === "tether") {
      expect(placed.logs[0]?.topics).toHaveLength(1);
      expect(placed.logs[0]?.data).toBe(pad(frozen.toLowerCase() as Hex));
    } else expect(placed.logs[0]?.topics[1]).toBe(pad(frozen.toLowerCase() as Hex));
    expect(await adapter.isFrozen(frozen)).toBe(true);
    // Any spelling of the address.
    expect(await adapter.isFrozen(frozen.toLowerCase())).toBe(true);
    expect(await adapter.isFrozen(other)).toBe(false);

    const released = await unfreezeAddress(node, tokens[kind], frozen, kind);
    expect(parseEventLogs({ abi: abi(), logs: released.logs })[0]?.eventName).toBe(events[1]);
    expect(await adapter.isFrozen(frozen)).toBe(false);
  });

  it("takes the kind from the registry, or from the `freeze` option", async () => {
    const frozen = account().address;
    await freezeAddress(node, tokens[kind], frozen, kind);
    expect(await evmAdapter(kind, { network }).isFrozen(frozen)).toBe(true);
    // USDT-ERC20 (the adapter's default network) is `tether`: the option overrides it.
    expect(await evmAdapter(kind, { freeze: kind }).isFrozen(frozen)).toBe(true);
  });

  it("only the owner (the deployer) freezes", async () => {
    const stranger = account();
    await node.testClient.setBalance({ address: stranger.address, value: 10n ** 20n });
    const functionName =
      kind === "tether" ? "addBlackList" : kind === "usdc" ? "blacklist" : "addToBlockedList";
    await expect(
      node.publicClient.simulateContract({
        account: stranger.address,
        address: tokens[kind],
        abi: abi(),
        functionName,
        args: [account().address],
      }),
    ).rejects.toThrow();
  });
});

describe("transfers of a frozen address", () => {
  /** A sender holding 10 tokens and a recipient, both funded for gas by the transfer helper. */
  async function parties(kind: FreezeKind) {
    const a = account();
    const b = account();
    await mintTestToken(node, tokens[kind], a.address, USDT(10));
    await mintTestToken(node, tokens[kind], b.address, USDT(10));
    return { a, b };
  }

  it("tether: a transfer TO a frozen address succeeds (the coins are stuck), FROM it reverts", async () => {
    const { a, b } = await parties("tether");
    await freezeAddress(node, tokens.tether, b.address, "tether");
    const r = await transferTestToken(node, tokens.tether, a.key, b.address, USDT(3));
    expect(r.status).toBe("success");
    expect(await testUsdtBalance(node, tokens.tether, b.address)).toBe(USDT(13));
    await expect(transferTestToken(node, tokens.tether, b.key, a.address, USDT(1))).rejects.toThrow();
    expect(await testUsdtBalance(node, tokens.tether, b.address)).toBe(USDT(13));
    // Nor can a spender move it (`transferFrom` checks `from`); the frozen one may still approve.
    const spender = account();
    await node.testClient.setBalance({ address: spender.address, value: 10n ** 20n });
    const approved = await createWalletClient({
      account: privateKeyToAccount(b.key),
      chain: foundry,
      transport: http(node.rpcUrl),
    }).writeContract({
      address: tokens.tether,
      abi: TEST_USDT.abi,
      functionName: "approve",
      args: [spender.address, USDT(5)],
    });
    expect((await node.publicClient.waitForTransactionReceipt({ hash: approved })).status).toBe("success");
    await expect(
      node.publicClient.simulateContract({
        account: spender.address,
        address: tokens.tether,
        abi: TEST_USDT.abi,
        functionName: "transferFrom",
        args: [b.address, spender.address, 1n],
      }),
    ).rejects.toThrow();
    // A frozen spender is not checked by Tether's original contract: only `from`.
    await unfreezeAddress(node, tokens.tether, b.address, "tether");
    expect((await transferTestToken(node, tokens.tether, b.key, a.address, USDT(1))).status).toBe("success");
  });

  it("tether: getBlackListStatus answers as the isBlackListed mapping", async () => {
    const frozen = account().address;
    const status = () =>
      node.publicClient.readContract({
        address: tokens.tether,
        abi: TEST_USDT.abi,
        functionName: "getBlackListStatus",
        args: [frozen],
      });
    expect(await status()).toBe(false);
    await freezeAddress(node, tokens.tether, frozen, "tether");
    expect(await status()).toBe(true);
  });

  it("usdc: a transfer to or from a frozen address reverts", async () => {
    const { a, b } = await parties("usdc");
    await freezeAddress(node, tokens.usdc, b.address, "usdc");
    await expect(transferTestToken(node, tokens.usdc, a.key, b.address, USDT(1))).rejects.toThrow(
      /Blacklistable: account is blacklisted/,
    );
    await expect(transferTestToken(node, tokens.usdc, b.key, a.address, USDT(1))).rejects.toThrow(
      /Blacklistable: account is blacklisted/,
    );
    expect(await testUsdtBalance(node, tokens.usdc, a.address)).toBe(USDT(10));
    expect(await testUsdtBalance(node, tokens.usdc, b.address)).toBe(USDT(10));
    await unfreezeAddress(node, tokens.usdc, b.address, "usdc");
    expect((await transferTestToken(node, tokens.usdc, a.key, b.address, USDT(1))).status).toBe("success");
  });

  it("tether-blocked: a transfer TO a blocked address succeeds, FROM it reverts", async () => {
    const token = tokens["tether-blocked"];
    const { a, b } = await parties("tether-blocked");
    await freezeAddress(node, token, b.address, "tether-blocked");
    expect((await transferTestToken(node, token, a.key, b.address, USDT(2))).status).toBe("success");
    expect(await testUsdtBalance(node, token, b.address)).toBe(USDT(12));
    await expect(transferTestToken(node, token, b.key, a.address, USDT(1))).rejects.toThrow();
  });

  it("none: there is nothing to freeze with", async () => {
    await expect(freezeAddress(node, tokens.none, account().address, "usdc")).rejects.toThrow(/no freeze/);
    await expect(freezeAddress(node, tokens.none, account().address, "tether-blocked")).rejects.toThrow(
      /no freeze/,
    );
  });
});

describe("destroying a frozen address's funds", () => {
  it.each([
    { kind: "tether" as const, event: "DestroyedBlackFunds", user: "_blackListedUser" },
    { kind: "tether-blocked" as const, event: "DestroyedBlockedFunds", user: "_blockedUser" },
  ])("$kind: the balance is zeroed, the supply lowered, $event emitted", async ({ kind, event, user }) => {
    const token = tokens[kind];
    const abi = kind === "tether" ? TEST_USDT.abi : TEST_TOKEN.abi;
    const victim = account().address;
    await mintTestToken(node, token, victim, USDT(7));
    // Only a frozen address's funds can be destroyed.
    await expect(destroyFrozenFunds(node, token, victim, kind)).rejects.toThrow();
    await freezeAddress(node, token, victim, kind);
    const supply = await totalSupply(token, kind);
    const r = await destroyFrozenFunds(node, token, victim, kind);
    expect(await testUsdtBalance(node, token, victim)).toBe(0n);
    expect(await totalSupply(token, kind)).toBe(supply - USDT(7));
    const logs = parseEventLogs({ abi, logs: r.logs });
    const destroyed = logs.find((l) => l.eventName === event);
    expect(destroyed?.args).toEqual({ [user]: victim, _balance: USDT(7) });
    // Tether's original event does not index the address (it is in the data); USDT0's does.
    expect(destroyed?.topics.length).toBe(kind === "tether" ? 1 : 2);
    if (kind !== "tether") expect(destroyed?.topics[1]).toBe(pad(victim.toLowerCase() as Hex));
    // Tether's original contract emits no Transfer for it; USDT0 burns (a Transfer to 0x0).
    const transfers = logs.filter((l) => l.eventName === "Transfer");
    expect(transfers.length).toBe(kind === "tether" ? 0 : 1);
    // Still frozen, with nothing left.
    expect(await evmAdapter(kind, { freeze: kind }).isFrozen(victim)).toBe(true);
  });
});

describe("a kind without freeze, and a kind that does not match the contract", () => {
  it("none: false without a call to the node", async () => {
    const proxy = await startRpcProxy(node.rpcUrl);
    try {
      const adapter = evmAdapter("none", { network: "USDT-BEP20", rpcUrl: proxy.url });
      proxy.resetCount();
      expect(await adapter.isFrozen(account().address)).toBe(false);
      expect(proxy.count).toBe(0);
      // Even a token that has a freeze function: the registry says there is none to read.
      expect(
        await evmAdapter("usdc", { freeze: "none", rpcUrl: proxy.url }).isFrozen(account().address),
      ).toBe(false);
      expect(proxy.count).toBe(0);
    } finally {
      await proxy.stop();
    }
  });

  // Every pair (registry kind, contract kind) that differs: the view of the registry's kind
  // reverts on the contract (TestToken answers only its own style's view; TestUSDT has only
  // isBlackListed), so the adapter fails instead of answering false.
  const mismatches = (["tether", "usdc", "tether-blocked", "none"] as const).flatMap((contract) =>
    (["tether", "usdc", "tether-blocked"] as const)
      .filter((registry) => registry !== contract)
      .map((registry) => ({ registry, contract })),
  );
  it.each(mismatches)(
    "registry $registry against a $contract contract: ChainUnavailableError",
    async ({ registry, contract }) => {
      const adapter = evmAdapter(contract, { freeze: registry });
      await expect(adapter.isFrozen(account().address)).rejects.toBeInstanceOf(ChainUnavailableError);
    },
  );

  it("a token address without code: ChainUnavailableError", async () => {
    const adapter = new EvmChainAdapter({
      rpcUrl: node.rpcUrl,
      tokenAddress: account().address,
      network: "USDC-ERC20",
    });
    await expect(adapter.isFrozen(account().address)).rejects.toBeInstanceOf(ChainUnavailableError);
  });
});

describe("TronChainAdapter.isFrozen (USDT-TRC20, `tether`) against the TRON emulator", () => {
  let emulator: TronEmulator;
  let adapter: TronChainAdapter;
  const tron = (evm: Hex) => tronAddressFromBytes(toBytes(evm));

  beforeAll(async () => {
    emulator = await startTronEmulator(node, tokens.tether);
    adapter = new TronChainAdapter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
  });

  afterAll(async () => {
    await emulator?.stop();
  });

  it("the emulator answers an arbitrary view (isBlackListed) through triggerconstantcontract", async () => {
    const frozen = account().address;
    await freezeAddress(node, tokens.tether, frozen, "tether");
    const res = (await (
      await fetch(`${emulator.url}/wallet/triggerconstantcontract`, {
        method: "POST",
        body: JSON.stringify({
          owner_address: `41${frozen.slice(2)}`,
          contract_address: `41${tokens.tether.slice(2)}`,
          function_selector: "isBlackListed(address)",
          parameter: pad(frozen).slice(2),
        }),
      })
    ).json()) as { result: { result: boolean }; constant_result: string[] };
    expect(res.result.result).toBe(true);
    expect(res.constant_result).toEqual([`${"0".repeat(63)}1`]);
  });

  it("is false before the freeze, true after it, false once released", async () => {
    const evm = account().address;
    const address = tron(evm);
    expect(await adapter.isFrozen(address)).toBe(false);
    await freezeAddress(node, tokens.tether, evm, "tether");
    expect(await adapter.isFrozen(address)).toBe(true);
    await unfreezeAddress(node, tokens.tether, evm, "tether");
    expect(await adapter.isFrozen(address)).toBe(false);
  });

  it("a contract without isBlackListed (a revert, answered as java-tron does): ChainUnavailableError", async () => {
    const usdcEmulator = await startTronEmulator(node, tokens.usdc);
    try {
      const res = (await (
        await fetch(`${usdcEmulator.url}/wallet/triggerconstantcontract`, {
          method: "POST",
          body: JSON.stringify({
            owner_address: `41${"00".repeat(20)}`,
            contract_address: `41${tokens.usdc.slice(2)}`,
            function_selector: "isBlackListed(address)",
            parameter: pad(account().address).slice(2),
          }),
        })
      ).json()) as { result: { result: boolean; message: string }; transaction: { ret: { ret: string }[] } };
      expect(res.result.result).toBe(true);
      expect(Buffer.from(res.result.message, "hex").toString()).toBe("REVERT opcode executed");
      expect(res.transaction.ret[0]?.ret).toBe("FAILED");

      const wrong = new TronChainAdapter({
        apiUrl: usdcEmulator.url,
        tokenAddress: usdcEmulator.tokenAddress,
      });
      await expect(wrong.isFrozen(tron(account().address))).rejects.toBeInstanceOf(ChainUnavailableError);

      // A revert whose data reads like a boolean (e.g. `revert(0, 32)`) and no message for tronweb
      // to throw on: the FAILED `ret` alone keeps it from being read as "not frozen".
      const proxy = await startRpcProxy(usdcEmulator.url);
      try {
        proxy.rewriteResponse = (answer) => {
          const a = answer as { result?: { message?: string }; constant_result?: string[] };
          if (a.result?.message) {
            delete a.result.message;
            a.constant_result = ["0".repeat(64)];
          }
          return answer;
        };
        const stripped = new TronChainAdapter({ apiUrl: proxy.url, tokenAddress: usdcEmulator.tokenAddress });
        await expect(stripped.isFrozen(tron(account().address))).rejects.toBeInstanceOf(
          ChainUnavailableError,
        );
      } finally {
        await proxy.stop();
      }
    } finally {
      await usdcEmulator.stop();
    }
  });
});

describe("ProviderPool.isFrozen: frozen when either provider says so", () => {
  let honest: RpcProxy;
  let liar: RpcProxy;
  /** What the liar answers to the freeze view: "frozen", "not frozen", or the truth (null). */
  let lie: boolean | null = null;
  const selector = toFunctionSelector("isBlacklisted(address)");

  beforeAll(async () => {
    honest = await startRpcProxy(node.rpcUrl);
    liar = await startRpcProxy(node.rpcUrl);
    liar.rewriteResponse = (answer, request) => {
      const r = request as { method?: string; params?: { data?: string; input?: string }[] };
      const a = answer as { result?: unknown };
      const data = r.params?.[0]?.data ?? r.params?.[0]?.input ?? "";
      if (lie !== null && r.method === "eth_call" && data.startsWith(selector))
        a.result = pad(lie ? "0x1" : "0x0");
      return answer;
    };
  });

  afterAll(async () => {
    await honest?.stop();
    await liar?.stop();
  });

  const pool = (order: "honest-first" | "liar-first") => {
    const providers = [
      { name: "p1 honest", adapter: evmAdapter("usdc", { network: "USDC-ERC20", rpcUrl: honest.url }) },
      { name: "p2 liar", adapter: evmAdapter("usdc", { network: "USDC-ERC20", rpcUrl: liar.url }) },
    ];
    return new ProviderPool("USDC-ERC20", order === "honest-first" ? providers : providers.reverse(), {
      probeIntervalMs: 60_000,
    });
  };

  it.each(["honest-first", "liar-first"] as const)(
    "%s: a frozen address the liar calls free is frozen",
    async (order) => {
      const frozen = account().address;
      await freezeAddress(node, tokens.usdc, frozen, "usdc");
      lie = false;
      expect(await pool(order).isFrozen(frozen)).toBe(true);
      lie = null;
    },
  );

  it.each(["honest-first", "liar-first"] as const)(
    "%s: a free address the liar calls frozen is frozen (the safe side)",
    async (order) => {
      lie = true;
      expect(await pool(order).isFrozen(account().address)).toBe(true);
      lie = null;
    },
  );

  it("free when both say so; frozen when both say so", async () => {
    const address = account().address;
    const p = pool("liar-first");
    expect(await p.isFrozen(address)).toBe(false);
    await freezeAddress(node, tokens.usdc, address, "usdc");
    expect(await p.isFrozen(address)).toBe(true);
  });

  it("one provider failing: the other's answer stands; both failing: ChainUnavailableError", async () => {
    const frozen = account().address;
    await freezeAddress(node, tokens.usdc, frozen, "usdc");
    liar.mode = "error";
    try {
      expect(await pool("liar-first").isFrozen(frozen)).toBe(true);
      honest.mode = "error";
      await expect(pool("liar-first").isFrozen(frozen)).rejects.toBeInstanceOf(ChainUnavailableError);
    } finally {
      liar.mode = "pass";
      honest.mode = "pass";
    }
  });

  it("the honest provider set aside as a suspect is still asked: the liar alone does not clear an address", async () => {
    const frozen = account().address;
    await freezeAddress(node, tokens.usdc, frozen, "usdc");
    const p = pool("liar-first");
    // The honest provider (position 1) was outvoted on something else and set aside: the pool's
    // ranking then holds only the liar.
    p.disagreed(1, { subject: "head", detail: "test", confirmers: [] });
    expect(p.health().map((h) => h.condition)).toEqual(["ok", "suspect"]);
    lie = false;
    try {
      expect(await p.isFrozen(frozen)).toBe(true);
    } finally {
      lie = null;
    }
  });

  it("a wrapper adapter that lies: any provider's true wins", async () => {
    const honestAdapter = evmAdapter("usdc", { network: "USDC-ERC20" });
    const lying = (answer: boolean): ChainAdapter =>
      Object.assign(Object.create(honestAdapter) as ChainAdapter, { isFrozen: async () => answer });
    const free = account().address;
    const p = new ProviderPool("USDC-ERC20", [
      { name: "p1 liar", adapter: lying(true) },
      { name: "p2 honest", adapter: honestAdapter },
    ]);
    expect(await p.isFrozen(free)).toBe(true);
    const q = new ProviderPool("USDC-ERC20", [
      { name: "p1 honest", adapter: honestAdapter },
      { name: "p2 liar", adapter: lying(false) },
    ]);
    expect(await q.isFrozen(free)).toBe(false);
  });
});

describe("freezeEvents: the issuer's events, as the watch of own addresses reads them", () => {
  const changesOf = (events: { address: string; change: string }[], address: string) =>
    events.filter((e) => e.address === address).map((e) => e.change);

  it.each(KINDS)(
    "$kind ($network): frozen, (destroyed,) released — the address in the network's spelling, other contracts' logs ignored",
    async ({ kind, network }) => {
      const adapter = evmAdapter(kind, { network });
      const victim = account().address;
      const from = Number(await node.publicClient.getBlockNumber()) + 1;
      await mintTestToken(node, tokens[kind], victim, USDT(3));
      await freezeAddress(node, tokens[kind], victim, kind);
      if (kind !== "usdc") await destroyFrozenFunds(node, tokens[kind], victim, kind);
      // The same event from another contract of the same kind names nobody of ours.
      const other =
        kind === "tether"
          ? await deployTestUsdt(node)
          : await deployTestToken(node, { symbol: "X", decimals: 6, freeze: kind });
      const decoy = account().address;
      await freezeAddress(node, other, decoy, kind);
      await unfreezeAddress(node, tokens[kind], victim, kind);
      const to = Number(await node.publicClient.getBlockNumber());
      const events = await adapter.freezeEvents({ fromBlock: from, toBlock: to });
      expect(changesOf(events, victim)).toEqual(
        kind === "usdc" ? ["frozen", "released"] : ["frozen", "destroyed", "released"],
      );
      expect(events.some((e) => e.address.toLowerCase() === decoy.toLowerCase())).toBe(false);
      // A range without them: none.
      expect(await adapter.freezeEvents({ fromBlock: from, toBlock: from })).toEqual([]);
    },
  );

  it("none: no events and no call", async () => {
    const proxy = await startRpcProxy(node.rpcUrl);
    try {
      const adapter = evmAdapter("none", { network: "USDT-BEP20", rpcUrl: proxy.url });
      proxy.resetCount();
      expect(await adapter.freezeEvents({ fromBlock: 0, toBlock: 10 })).toEqual([]);
      expect(proxy.count).toBe(0);
    } finally {
      await proxy.stop();
    }
  });

  it("TRON (the emulator): Tether's events, the address in base58", async () => {
    const emulator = await startTronEmulator(node, tokens.tether);
    try {
      const adapter = new TronChainAdapter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
      const victim = account().address;
      const from = Number(await node.publicClient.getBlockNumber()) + 1;
      await freezeAddress(node, tokens.tether, victim, "tether");
      await unfreezeAddress(node, tokens.tether, victim, "tether");
      const to = Number(await node.publicClient.getBlockNumber());
      const events = await adapter.freezeEvents({ fromBlock: from, toBlock: to });
      const base58 = tronAddressFromBytes(toBytes(victim));
      expect(changesOf(events, base58)).toEqual(["frozen", "released"]);
    } finally {
      await emulator.stop();
    }
  });

  it("a pool: the two providers' events together, so one provider cannot hide an event", async () => {
    const hiding = await startRpcProxy(node.rpcUrl);
    hiding.rewriteResponse = (answer, request) => {
      const r = request as { method?: string };
      if (r.method === "eth_getLogs") (answer as { result?: unknown }).result = [];
      return answer;
    };
    try {
      const victim = account().address;
      const from = Number(await node.publicClient.getBlockNumber()) + 1;
      await freezeAddress(node, tokens.usdc, victim, "usdc");
      const to = Number(await node.publicClient.getBlockNumber());
      const pool = new ProviderPool(
        "USDC-ERC20",
        [
          { name: "p1 hiding", adapter: evmAdapter("usdc", { network: "USDC-ERC20", rpcUrl: hiding.url }) },
          { name: "p2 honest", adapter: evmAdapter("usdc", { network: "USDC-ERC20" }) },
        ],
        { probeIntervalMs: 60_000 },
      );
      const events = await pool.freezeEvents({ fromBlock: from, toBlock: to });
      expect(changesOf(events, victim)).toEqual(["frozen"]);
    } finally {
      await hiding.stop();
    }
  });
});

describe("the tokens", () => {
  // The freeze helpers send from the deployer: it owns every token.
  it("are owned by anvil's account #0", async () => {
    const deployer = privateKeyToAccount(ANVIL_DEPLOYER_KEY).address;
    for (const [kind, token] of Object.entries(tokens))
      expect(
        await node.publicClient.readContract({
          address: token,
          abi: kind === "tether" ? TEST_USDT.abi : TEST_TOKEN.abi,
          functionName: "owner",
        }),
      ).toBe(deployer);
  });
});
