import type { Hex } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import {
  type AnvilNode,
  deployTestUsdt,
  keepMining,
  mintTestUsdt,
  startAnvil,
  testUsdtBalance,
} from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { waitFor } from "../webhooks/support.js";

// Issue #34, finding 2: with `ERC20_RPC_URLS=<liar>,<honest>`, a provider that rewrote the receipts of
// the gateway's own transactions to `status: 0x0, logs: []` made a paid 50 USDT withdrawal `failed`
// with its hold released, while its net amount arrived on chain (paid twice). The liar here also
// invents heads 1 000 blocks ahead and shifts block timestamps by a day.
// Two providers, one liar: nothing wrong is ever recorded (the withdrawal stays processing, its hold
// stays), an alert fires (log field, `/metrics`, `/readyz`); once the liar stops, it completes.
// Three providers, one liar: the honest majority decides and it completes. Both networks.

const MNEMONIC = "test test test test test test test test test test test junk";
const METRICS_TOKEN = "metrics-token-for-tests-0123456789";
const CONFIRMATIONS = 2;
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);

type Chain = "evm" | "tron";
type Json = Record<string, any>;

interface Lies {
  receipts: number;
  heads: number;
  timestamps: number;
}

interface World {
  anvil: AnvilNode;
  token: Hex;
  emulator: TronEmulator | undefined;
  proxies: RpcProxy[];
  svc: TestService;
  logs: Json[];
  lying: { on: boolean };
  lies: Lies;
  network: "USDT-ERC20" | "USDT-TRC20";
  api: Record<string, string>;
}

let world: World | undefined;

afterEach(async () => {
  const w = world;
  world = undefined;
  await w?.svc.close();
  for (const p of w?.proxies ?? []) await p.stop();
  await w?.emulator?.stop();
  await w?.anvil.stop();
});

/** Each JSON-RPC answer with the call it answers (batches answered call by call). */
function onEach(answer: unknown, request: unknown, f: (a: Json, r: Json) => void) {
  if (Array.isArray(answer) && Array.isArray(request)) {
    for (const [i, a] of answer.entries()) f(a, request[i]);
  } else if (answer && request) f(answer as Json, request as Json);
  return answer;
}

/** The lying provider of an EVM chain: our receipts reverted, heads ahead, timestamps a day off. */
function evmLiar(proxy: RpcProxy, hot: string, lying: { on: boolean }, lies: Lies) {
  proxy.rewriteResponse = (answer, request) =>
    onEach(answer, request, (a, r) => {
      if (!lying.on || !a.result) return;
      if (
        r.method === "eth_getTransactionReceipt" &&
        String(a.result.from).toLowerCase() === hot.toLowerCase()
      ) {
        a.result.status = "0x0";
        a.result.logs = [];
        lies.receipts++;
      } else if (r.method === "eth_blockNumber") {
        a.result = `0x${(Number(a.result) + 1_000).toString(16)}`;
        lies.heads++;
      } else if (r.method === "eth_getBlockByNumber" && typeof a.result.timestamp === "string") {
        a.result.timestamp = `0x${(Number(a.result.timestamp) + 86_400).toString(16)}`;
        lies.timestamps++;
      }
    });
}

/** The lying provider of a TRON chain: every transaction info reverted, the head ahead, timestamps a day off. */
function tronLiar(proxy: RpcProxy, lying: { on: boolean }, lies: Lies) {
  proxy.rewriteResponse = (answer, request) => {
    const a = answer as Json;
    const r = (request ?? {}) as Json;
    if (!lying.on || !a || Array.isArray(a)) return answer;
    if (typeof r.value === "string" && a.receipt && typeof a.blockNumber === "number") {
      // wallet/gettransactioninfobyid
      a.receipt.result = "REVERT";
      a.result = "FAILED";
      a.log = [];
      lies.receipts++;
    }
    const raw = a.block_header?.raw_data;
    if (raw && typeof raw.number === "number") {
      if (typeof r.num !== "number") {
        // wallet/getnowblock
        raw.number += 1_000;
        lies.heads++;
      }
      if (typeof raw.timestamp === "number") {
        raw.timestamp += 86_400_000;
        lies.timestamps++;
      }
    }
    return answer;
  };
}

async function setUp(chain: Chain, honest: number, lyingFromStart: boolean): Promise<World> {
  const anvil = await startAnvil();
  const token = await deployTestUsdt(anvil);
  const emulator = chain === "tron" ? await startTronEmulator(anvil, token) : undefined;
  const target = emulator ? emulator.url : anvil.rpcUrl;
  const proxies = [await startRpcProxy(target)];
  for (let i = 0; i < honest; i++) proxies.push(await startRpcProxy(target));
  const network = chain === "evm" ? "USDT-ERC20" : "USDT-TRC20";
  const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX);
  const hotEvm = (chain === "evm" ? hot : tronAddressToEvm(hot)) as Hex;
  const lying = { on: lyingFromStart };
  const lies: Lies = { receipts: 0, heads: 0, timestamps: 0 };
  if (chain === "evm") evmLiar(proxies[0] as RpcProxy, hotEvm, lying, lies);
  else tronLiar(proxies[0] as RpcProxy, lying, lies);
  const logs: Json[] = [];
  const urls = proxies.map((p) => p.url).join(","); // the liar first: the first provider asked
  const svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      METRICS_TOKEN,
      MASTER_MNEMONIC: MNEMONIC,
      ...(chain === "evm"
        ? {
            SANDBOX_ERC20_RPC_URLS: urls,
            SANDBOX_USDT_ERC20_CONTRACT: token,
            CONFIRMATIONS_ERC20: `${CONFIRMATIONS}`,
          }
        : {
            SANDBOX_TRC20_API_URLS: urls,
            SANDBOX_USDT_TRC20_CONTRACT: emulator?.tokenAddress as string,
            CONFIRMATIONS_TRC20: `${CONFIRMATIONS}`,
          }),
    },
    logDestination: {
      write(line: string) {
        try {
          logs.push(JSON.parse(line));
        } catch {}
      },
    },
  });
  // The hot wallet holds the tokens it pays out and the native coin for fees.
  await mintTestUsdt(anvil, token, hotEvm, 10_000_000_000n);
  await anvil.testClient.setBalance({ address: hotEvm, value: 10n ** 20n });
  const w: World = { anvil, token, emulator, proxies, svc, logs, lying, lies, network, api: {} };
  world = w;

  // A merchant funded by a real deposit of 500 USDT (seen by the watcher through the providers).
  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: {
      email: `liar-${Date.now()}@example.com`,
      password: "a long passphrase 123",
      companyName: "Liar Co",
    },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const pair = reg.body.data.apiKeys.find((k: { environment: string }) => k.environment === "sandbox");
  w.api = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
  const s = await call(svc.urls.sandbox, "/checkout/session", {
    headers: w.api,
    json: { amount: 500, currencyType: network },
  });
  expect(s.status, s.text).toBe(201);
  const deposit = s.body.data.walletAddress as string;
  await mintTestUsdt(
    anvil,
    token,
    (chain === "evm" ? deposit : tronAddressToEvm(deposit)) as Hex,
    500_000_000n,
  );
  const stop = keepMining(anvil);
  try {
    await waitFor(async () => (await balance(w)).available === 500, 60_000);
  } finally {
    stop();
  }
  return w;
}

async function balance(w: World) {
  const r = await call(w.svc.urls.sandbox, "/api/v1/public/balance", { headers: w.api });
  const line = (r.body.data as { currencyType: string; available: number; held: number }[]).find(
    (b) => b.currencyType === w.network,
  );
  return { available: line?.available ?? 0, held: line?.held ?? 0 };
}

const RECIPIENT = {
  evm: "0x1000000000000000000000000000000000000001",
  tron: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW",
};

async function withdraw(w: World, chain: Chain) {
  const r = await call(w.svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers: w.api,
    json: { amount: 50, currencyType: w.network, walletAddress: RECIPIENT[chain] },
  });
  expect(r.status, r.text).toBe(201);
  expect(r.body.data.status).toBe("processing");
  return r.body.data as { id: string; netAmount: number };
}

const received = (w: World, chain: Chain) =>
  testUsdtBalance(w.anvil, w.token, chain === "evm" ? RECIPIENT.evm : tronAddressToEvm(RECIPIENT.tron));

async function statusOf(w: World, id: string) {
  const r = await call(w.svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${id}`, { headers: w.api });
  return r.body.data.status as string;
}

async function metrics(w: World) {
  return (
    await call(w.svc.urls.production, "/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text;
}

for (const chain of ["evm", "tron"] as const) {
  describe(`a lying ${chain === "evm" ? "EVM" : "TRON"} provider and a withdrawal's outcome`, () => {
    it("two providers, one liar: the paid withdrawal is never failed nor released; it waits and an alert fires; it completes once they agree", async () => {
      const w = await setUp(chain, 1, false);
      w.lying.on = true;
      const wd = await withdraw(w, chain);
      const statuses = new Set<string>();
      const stop = keepMining(w.anvil);
      try {
        // Paid on chain, and well past its confirmations on the honest provider.
        await waitFor(async () => (await received(w, chain)) > 0n, 30_000);
        // Until an alert fires or the withdrawal is decided (the finding: `failed`, hold released).
        await waitFor(async () => {
          const s = await statusOf(w, wd.id);
          statuses.add(s);
          const alerted = w.logs.some((l) => l.alert === "chain_providers_disagree" && l.intentId === wd.id);
          return alerted || s === "failed" || s === "completed" ? true : null;
        }, 30_000);
        const until = Date.now() + 6_000;
        while (Date.now() < until) {
          statuses.add(await statusOf(w, wd.id));
          await new Promise((r) => setTimeout(r, 300));
        }
      } finally {
        stop();
      }
      expect(await received(w, chain)).toBe(BigInt(Math.round(wd.netAmount * 1e6)));
      expect([...statuses]).toEqual(["processing"]); // never failed, never completed on one word
      expect(await balance(w)).toEqual({ available: 450, held: 50 }); // the hold stays
      const row = await w.svc.database.db
        .selectFrom("outgoing_transfers")
        .select(["status", "last_error"])
        .where("intent_id", "=", wd.id)
        .executeTakeFirstOrThrow();
      expect(row.status).toBe("broadcast");
      expect(row.last_error).toMatch(/^disputed: providers disagree/);
      // The alert: a log field, a metric, /readyz.
      const alert = w.logs.find((l) => l.alert === "chain_providers_disagree" && l.intentId === wd.id);
      expect(alert?.level).toBeGreaterThanOrEqual(50);
      const text = await metrics(w);
      expect(text).toMatch(
        new RegExp(`stablegate_outgoing_disputed\\{network="${w.network}",environment="sandbox"\\} 1`),
      );
      expect(text).toMatch(/stablegate_chain_provider_disagreements_total\{[^}]*\} [1-9]/);
      const ready = await call(w.svc.urls.production, "/readyz", {
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      });
      expect(ready.body.checks[`sending:${w.network}:sandbox`].detail).toMatch(/1 disputed/);
      expect(w.lies.receipts).toBeGreaterThan(0);
      expect(w.lies.heads).toBeGreaterThan(0);
      expect(w.lies.timestamps).toBeGreaterThan(0);

      // The liar stops: both providers agree, and the withdrawal completes (it waited, it was not lost).
      w.lying.on = false;
      const stop2 = keepMining(w.anvil);
      try {
        await waitFor(async () => ((await statusOf(w, wd.id)) === "completed" ? true : null), 40_000);
      } finally {
        stop2();
      }
      expect(await balance(w)).toEqual({ available: 450, held: 0 });
      expect((await verifyLedger(w.svc.database.db)).ok).toBe(true);
      console.log(JSON.stringify({ finding: "34.2", chain, providers: 2, liesTold: w.lies }));
    }, 180_000);

    it("three providers, one liar: the honest majority decides and the withdrawal completes", async () => {
      const w = await setUp(chain, 2, true);
      const wd = await withdraw(w, chain);
      const statuses = new Set<string>();
      const stop = keepMining(w.anvil);
      try {
        await waitFor(async () => {
          const s = await statusOf(w, wd.id);
          statuses.add(s);
          return s === "completed" ? true : null;
        }, 60_000);
      } finally {
        stop();
      }
      expect([...statuses].filter((s) => s !== "processing" && s !== "completed")).toEqual([]);
      expect(await received(w, chain)).toBe(BigInt(Math.round(wd.netAmount * 1e6)));
      expect(await balance(w)).toEqual({ available: 450, held: 0 });
      expect(w.lies.receipts).toBeGreaterThan(0);
      expect(w.lies.heads).toBeGreaterThan(0);
      // Block times: with three providers the liar is set aside after its first lie about a head,
      // and then not asked for blocks at all; the two-provider case shows those lies refused.
      // The liar's answers were refused and counted against it.
      expect(await metrics(w)).toMatch(
        new RegExp(
          `stablegate_chain_provider_disagreements_total\\{[^}]*provider="p1 ${new URL((w.proxies[0] as RpcProxy).url).host}"[^}]*\\} [1-9]`,
        ),
      );
      expect((await verifyLedger(w.svc.database.db)).ok).toBe(true);
      console.log(JSON.stringify({ finding: "34.2", chain, providers: 3, liesTold: w.lies }));
    }, 180_000);
  });
}
