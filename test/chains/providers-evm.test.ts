import { randomBytes } from "node:crypto";
import { encodeAbiParameters, type Hex, pad } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceOf, hooksFor, type SandboxMerchant, sandboxMerchant } from "../deposits/support.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";

// Issue #22 "Must show", on a real EVM node (anvil, 6-decimal ERC20) behind six providers (the
// project's RPC proxy): one forges a Transfer log to a watched address, one answers 503, one hangs,
// one lags 50 blocks, two are honest. Deposits still confirm exactly once; the forged log alone
// credits nothing; /readyz names every bad provider; the disagreement is counted on /metrics.

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const METRICS_TOKEN = "metrics-token-for-tests-0123456789";
const CONFIRMATIONS = 3;

let anvil: AnvilNode;
let token: Hex;
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;
const proxies: Record<"forger" | "failing" | "honestA" | "hanging" | "lagging" | "honestB", RpcProxy> =
  {} as never;
/** The watched address the forger pays, and how much (set by the test). */
const forge: { to: Hex | null; units: bigint } = { to: null, units: 0n };

type RpcCall = { method?: string; params?: { fromBlock?: string }[] };
type RpcAnswer = { result?: unknown };

/** A Transfer log the chain never had: to `forge.to`, in the first block of the range asked. */
function forgedLog(request: RpcCall) {
  const block = request.params?.[0]?.fromBlock ?? "0x1";
  return {
    address: token.toLowerCase(),
    topics: [TRANSFER_TOPIC, pad("0x1111111111111111111111111111111111111111"), pad(forge.to as Hex)],
    data: encodeAbiParameters([{ type: "uint256" }], [forge.units]),
    blockNumber: block,
    blockHash: `0x${randomBytes(32).toString("hex")}`,
    transactionHash: `0x${randomBytes(32).toString("hex")}`,
    transactionIndex: "0x0",
    logIndex: "0x0",
    removed: false,
  };
}

function onEach(answer: unknown, request: unknown, f: (a: RpcAnswer, r: RpcCall) => void) {
  if (Array.isArray(answer) && Array.isArray(request)) {
    for (const [i, a] of answer.entries()) f(a, request[i]);
  } else if (answer && request) f(answer as RpcAnswer, request as RpcCall);
  return answer;
}

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  for (const name of ["forger", "failing", "honestA", "hanging", "lagging", "honestB"] as const)
    proxies[name] = await startRpcProxy(anvil.rpcUrl);
  proxies.failing.mode = "error";
  proxies.hanging.mode = "hang";
  proxies.lagging.rewriteResponse = (answer, request) =>
    onEach(answer, request, (a, r) => {
      if (r.method === "eth_blockNumber" && typeof a.result === "string")
        a.result = `0x${Math.max(0, Number(a.result) - 50).toString(16)}`;
    });
  proxies.forger.rewriteResponse = (answer, request) =>
    onEach(answer, request, (a, r) => {
      if (r.method === "eth_getLogs" && forge.to && Array.isArray(a.result)) a.result.push(forgedLog(r));
    });
  // Mine past the lag so the lagging provider's head is a real block number.
  await mineBlocks(anvil, 60);
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      METRICS_TOKEN,
      // The forger is listed first: it is the first provider asked.
      SANDBOX_ERC20_RPC_URLS: Object.values(proxies)
        .map((p) => p.url)
        .join(","),
      SANDBOX_USDT_ERC20_CONTRACT: token,
      CONFIRMATIONS_ERC20: `${CONFIRMATIONS}`,
    },
  });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  for (const p of Object.values(proxies)) await p?.stop();
  await anvil?.stop();
});

async function readiness() {
  const r = await call(svc.urls.production, "/readyz", {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return r.body.checks["chain-providers:USDT-ERC20:sandbox"] as
    | { status: string; detail: string }
    | undefined;
}

const host = (p: RpcProxy) => new URL(p.url).host;

describe("several providers, four of them bad (anvil)", () => {
  it("a real deposit confirms exactly once; a forged log alone credits nothing; /readyz names every bad provider", async () => {
    const session = async (amount: number) => {
      const r = await call(svc.urls.sandbox, "/checkout/session", {
        headers: m.headers,
        json: { amount, currencyType: "USDT-ERC20" },
      });
      expect(r.status, r.text).toBe(201);
      return r.body.data as { id: string; walletAddress: Hex };
    };
    const real = await session(42.5);
    const forged = await session(10);
    forge.to = forged.walletAddress;
    forge.units = 10_000_000n;

    const receipt = await mintTestUsdt(anvil, token, real.walletAddress, 42_500_000n);
    await mineBlocks(anvil, CONFIRMATIONS);
    const done = await waitFor(async () => {
      await mineBlocks(anvil, 1);
      const r = await call(svc.urls.sandbox, `/checkout/session/${real.id}`, { headers: m.headers });
      return r.body.data.status === "confirmed" ? r.body.data : null;
    }, 60_000);
    expect(done.actualBalance).toBe(42.5);
    expect(done.blockchainTxHash).toBe(receipt.transactionHash);

    // The forged session never saw a payment; nothing but the real deposit was credited.
    await mineBlocks(anvil, 5);
    await new Promise((r) => setTimeout(r, 2_000));
    const other = await call(svc.urls.sandbox, `/checkout/session/${forged.id}`, { headers: m.headers });
    expect(other.body.data.status).toBe("pending");
    expect(other.body.data.actualBalance).toBe(0);
    expect((await balanceOf(svc, m.headers, "USDT-ERC20")).available).toBe(42.5);
    const deposits = await svc.database.db
      .selectFrom("transactions")
      .select(["id", "status"])
      .where("merchant_id", "=", m.merchant.id)
      .where("type", "=", "deposit")
      .where("status", "<>", "pending")
      .execute();
    expect(deposits.map((d) => d.status)).toEqual(["confirmed"]);
    await waitFor(() => hooksFor(receiver, real.id).length >= 1, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(hooksFor(receiver, real.id).map((h) => h.body.data.status)).toEqual(["confirmed"]);

    // /readyz names the forger (suspect), the failing and hanging ones (down) and the lagging one.
    const ready = await waitFor(async () => {
      const c = await readiness();
      const named = [proxies.forger, proxies.failing, proxies.hanging, proxies.lagging].every((p) =>
        c?.detail.includes(host(p)),
      );
      return named ? c : null;
    }, 60_000);
    expect(ready?.status, ready?.detail).toBe("degraded");
    expect(ready?.detail).toMatch(new RegExp(`p1 ${host(proxies.forger)}: suspect, 1 disagreement`));
    expect(ready?.detail).toMatch(new RegExp(`p2 ${host(proxies.failing)}: down`));
    expect(ready?.detail).toMatch(new RegExp(`p4 ${host(proxies.hanging)}: down`));
    expect(ready?.detail).toMatch(new RegExp(`p5 ${host(proxies.lagging)}: lagging`));
    expect(ready?.detail).not.toContain(host(proxies.honestA));
    expect(ready?.detail).not.toContain(host(proxies.honestB));

    const metrics = await call(svc.urls.production, "/metrics", {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(metrics.text).toMatch(
      new RegExp(
        `stablegate_chain_provider_disagreements_total\\{[^}]*provider="p1 ${host(proxies.forger)}"[^}]*\\} [1-9]`,
      ),
    );
    expect(metrics.text).toMatch(
      new RegExp(`stablegate_chain_provider_up\\{[^}]*provider="p3 ${host(proxies.honestA)}"\\} 1`),
    );
  }, 120_000);
});
