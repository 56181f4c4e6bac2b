import { createHash, randomBytes } from "node:crypto";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { balanceOf, hooksFor, type SandboxMerchant, sandboxMerchant } from "../deposits/support.js";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";

// Issue #22 "Must show", the TRON side: the TRON HTTP API emulator (over anvil) behind six providers
// (the project's proxy): one forges, in every block once armed, a transaction with a Transfer log to
// a watched address (in the block's receipts and in the block itself), one answers 503, one
// hangs, one lags 50 blocks, two are honest. Deposits still confirm exactly once; the forged
// transfer alone credits nothing; /readyz names every bad provider.

const TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const METRICS_TOKEN = "metrics-token-for-tests-0123456789";
const CONFIRMATIONS = 3;

let anvil: AnvilNode;
let token: Hex;
let emulator: TronEmulator;
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;
const proxies: Record<"forger" | "failing" | "honestA" | "hanging" | "lagging" | "honestB", RpcProxy> =
  {} as never;
/**
 * The watched address the forger pays (base58), how much, the first block it forges in (the first
 * one mined after it is armed, so no reader can have read that block honestly before), and how
 * many times it served a forged transaction.
 */
const forge: { to: string | null; units: bigint; from: number | null; seed: string; served: number } = {
  to: null,
  units: 0n,
  from: null,
  seed: randomBytes(32).toString("hex"),
  served: 0,
};

/** The forged transaction of block `n` (one per block, never on the chain). */
const forgedTxId = (n: number) => createHash("sha256").update(`${forge.seed}:${n}`).digest("hex");

type TronRequest = { num?: number } | null;
type TronBlockJson = {
  blockID?: string;
  block_header?: { raw_data?: { number?: number } };
  transactions?: { txID: string }[];
};

const word = (hex: string) => hex.toLowerCase().padStart(64, "0");

/** A transaction info the chain never had: a Transfer of `forge.units` to `forge.to`. */
function forgedInfo(n: number) {
  return {
    id: forgedTxId(n),
    blockNumber: n,
    receipt: { result: "SUCCESS" },
    log: [
      {
        address: token.slice(2).toLowerCase(),
        topics: [
          TRANSFER_TOPIC,
          word("1111111111111111111111111111111111111111"),
          word(tronAddressToEvm(forge.to as string).slice(2)),
        ],
        data: word(forge.units.toString(16)),
      },
    ],
  };
}

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  emulator = await startTronEmulator(anvil, token);
  for (const name of ["forger", "failing", "honestA", "hanging", "lagging", "honestB"] as const)
    proxies[name] = await startRpcProxy(emulator.url);
  proxies.failing.mode = "error";
  proxies.hanging.mode = "hang";
  // `wallet/getnowblock` is the request without `num`: its block number, 50 behind.
  proxies.lagging.rewriteResponse = (answer, request) => {
    const block = answer as TronBlockJson;
    const raw = block?.block_header?.raw_data;
    if (typeof (request as TronRequest)?.num !== "number" && raw && typeof raw.number === "number")
      raw.number = Math.max(0, raw.number - 50);
    return answer;
  };
  // Every block from the first one mined after the forger is armed gets a forged transaction of its
  // own: in its receipts (`gettransactioninfobyblocknum`) and in its transaction list
  // (`getblockbynum`), as a consistent liar would. Every block, not one: which ranges the watcher
  // reads from the forger depends on the pool's ranking (a provider over 1 s slower goes behind
  // the others, as on a loaded machine), and the freeze watch reads receipts too.
  proxies.forger.rewriteResponse = (answer, request) => {
    const n = (request as TronRequest)?.num;
    if (!forge.to || forge.from === null || typeof n !== "number" || n < forge.from) return answer;
    if (Array.isArray(answer)) {
      forge.served += 1;
      answer.push(forgedInfo(n));
      return answer;
    }
    const block = answer as TronBlockJson;
    if (block?.blockID) block.transactions = [...(block.transactions ?? []), { txID: forgedTxId(n) }];
    return answer;
  };
  // Mine past the lag so the lagging provider's head is a real block number.
  await mineBlocks(anvil, 60);
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      METRICS_TOKEN,
      // The forger is listed first: it is the first provider asked.
      SANDBOX_TRC20_API_URLS: Object.values(proxies)
        .map((p) => p.url)
        .join(","),
      SANDBOX_USDT_TRC20_CONTRACT: emulator.tokenAddress,
      CONFIRMATIONS_TRC20: `${CONFIRMATIONS}`,
    },
  });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  for (const p of Object.values(proxies)) await p?.stop();
  await emulator?.stop();
  await anvil?.stop();
});

async function readiness() {
  const r = await call(svc.urls.production, "/readyz", {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return r.body.checks["chain-providers:USDT-TRC20:sandbox"] as
    | { status: string; detail: string }
    | undefined;
}

const host = (p: RpcProxy) => new URL(p.url).host;

describe("several providers, four of them bad (TRON emulator)", () => {
  it("a real deposit confirms exactly once; a forged log alone credits nothing; /readyz names every bad provider", async () => {
    const session = async (amount: number) => {
      const r = await call(svc.urls.sandbox, "/checkout/session", {
        headers: m.headers,
        json: { amount, currencyType: "USDT-TRC20" },
      });
      expect(r.status, r.text).toBe(201);
      return r.body.data as { id: string; walletAddress: string };
    };
    const real = await session(42.5);
    const forged = await session(10);
    forge.from = Number(await anvil.publicClient.getBlockNumber()) + 1;
    forge.to = forged.walletAddress;
    forge.units = 10_000_000n;

    const receipt = await mintTestUsdt(
      anvil,
      token,
      tronAddressToEvm(real.walletAddress) as Hex,
      42_500_000n,
    );
    await mineBlocks(anvil, CONFIRMATIONS);
    const done = await waitFor(async () => {
      await mineBlocks(anvil, 1);
      const r = await call(svc.urls.sandbox, `/checkout/session/${real.id}`, { headers: m.headers });
      return r.body.data.status === "confirmed" ? r.body.data : null;
    }, 150_000);
    expect(done.actualBalance).toBe(42.5);
    expect(done.blockchainTxHash).toBe(emulator.tronTxId(receipt.transactionHash));
    expect(forge.served).toBeGreaterThan(0); // the forger did serve its forged transaction

    // The forged session never saw a payment; nothing but the real deposit was credited.
    await mineBlocks(anvil, 5);
    await new Promise((r) => setTimeout(r, 2_000));
    const other = await call(svc.urls.sandbox, `/checkout/session/${forged.id}`, { headers: m.headers });
    expect(other.body.data.status).toBe("pending");
    expect(other.body.data.actualBalance).toBe(0);
    expect((await balanceOf(svc, m.headers, "USDT-TRC20")).available).toBe(42.5);
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
    let last: unknown;
    const ready = await waitFor(async () => {
      const c = await readiness();
      last = c;
      const named = [proxies.forger, proxies.failing, proxies.hanging, proxies.lagging].every((p) =>
        c?.detail.includes(host(p)),
      );
      return named ? c : null;
    }, 150_000).catch((e) => {
      throw new Error(`${(e as Error).message}; /readyz said last: ${JSON.stringify(last)}`);
    });
    expect(ready?.status, ready?.detail).toBe("degraded");
    expect(ready?.detail).toMatch(new RegExp(`p1 ${host(proxies.forger)}: suspect, [1-9]\\d* disagreement`));
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
  }, 400_000);
});
