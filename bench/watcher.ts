/**
 * `npm run bench:watcher` — the chain watcher on anvil: 1. cost per block at the tip with 1k and
 * 1M watched addresses (alternating 1k, 1M over BENCH_ROUNDS rounds, default 3; every round
 * printed, the ratios' median and spread), 2. catch-up speed, 3. block → observation latency,
 * 4. several networks: one process following 1, 3 and 6 EVM networks (six anvils, each with its
 * network's chain id, its token and its own counting proxy) at BENCH_NETWORK_WATCHED addresses
 * each, every network's watcher ticking side by side as the worker runs them; RPC calls and CPU of
 * this process per block per network, and their ratios 6/1 and 3/1 (goal ≤ 1.2).
 *
 * Settings: BENCH_DATABASE_URL (PostgreSQL admin URL; without it, in-memory PGlite), BENCH_ROUNDS,
 * BENCH_BLOCKS (200 ticks per cost measurement), BENCH_POLL_MS (20), BENCH_WATCHED (the large
 * watched set, 1,000,000), BENCH_PROVIDERS (1: one endpoint; more: that many proxies to the node
 * behind a `ProviderPool`, issue #22 — RPC calls are counted over all of them), BENCH_SECTIONS
 * (which sections run, e.g. `4` or `1,2`; default `1,2,3,4`), BENCH_NETWORK_BLOCKS (section 4:
 * blocks per network per measurement, 200), BENCH_NETWORK_WATCHED (section 4: watched addresses
 * per network, 100,000).
 *
 * Section 4 in detail: one database holds BENCH_NETWORK_WATCHED watched addresses on each of the
 * six currency types of `SEVERAL_NETWORKS` (the same addresses on every network: an EVM deposit
 * address is one key on all of them), in every configuration; each has its own anvil, USDT-ERC20 and
 * USDC-ERC20 both with chain id 1. A measurement of N networks makes N `ChainWatcher`s over the first
 * N networks (12 confirmations, one block per scan, as in section 1), each from a fresh cursor at its
 * chain's tip, gives each a first tick (lease, chain-time check; not counted), then repeats
 * BENCH_NETWORK_BLOCKS steps: one mint per network (one new block each, a quarter of them to a
 * watched address; sent to anvil directly and not timed), then the N ticks at once (`Promise.all`),
 * timed with `process.cpuUsage()`. The counting proxies run in a child process (this file with
 * BENCH_PROXY_HOST=1), so the CPU figure is the watchers' own, their RPC clients included (with
 * PGlite, the database's too; with BENCH_DATABASE_URL, the server's is not in it). After a warm-up
 * at 6 networks (40 blocks, not reported), the configurations alternate 1, 3, 6, then 6, 3, 1, …
 * (the order reversed every other round, as `alternate` does for two, so a steady drift of the
 * host favours none of them). `BENCH_SECTIONS=4 npm run bench:watcher` runs this section alone
 * (about 3 minutes on the shared 2-core machine with the defaults).
 */
import { fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { encodeFunctionData, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { EvmChainAdapter } from "../src/chains/evm/evm-adapter.js";
import { ProviderPool } from "../src/chains/provider-pool.js";
import type { Database } from "../src/db/database.js";
import { type CurrencyType, chainScale, currencyOf } from "../src/domain/currency.js";
import { createLogger } from "../src/observability/logger.js";
import { DepositHandoff } from "../src/watcher/handoff.js";
import { ChainWatcher } from "../src/watcher/watcher.js";
import {
  ANVIL_DEPLOYER_KEY,
  type AnvilNode,
  deployTestToken,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
  TEST_TOKEN,
} from "../test/support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../test/support/chain/rpc-proxy.js";
import {
  alternate,
  benchRounds,
  formatSpread,
  freshDatabase,
  percentile,
  type Round,
  ratioStats,
  reportRounds,
} from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL;
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 20);
/** Blocks per cost measurement (one tick each). */
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 200);
const WATCHED = Number(process.env.BENCH_WATCHED ?? 1_000_000);
const PROVIDERS = Number(process.env.BENCH_PROVIDERS ?? 1);
const BIG = WATCHED >= 1_000_000 ? `${WATCHED / 1_000_000}M` : `${WATCHED / 1_000}k`;
const logger = createLogger("silent");
const synthetic = (i: number) => `0x${String(i).padStart(40, "0")}` as Hex;

/** Which sections run: BENCH_SECTIONS, e.g. `4` or `1,2` (default all four). */
const SECTIONS = new Set(
  (process.env.BENCH_SECTIONS ?? "1,2,3,4")
    .split(",")
    .map((x) => Number(x.trim()))
    .filter((x) => x > 0),
);
/** Section 4: the networks, in the order they are added (N networks are the first N). */
const SEVERAL_NETWORKS: readonly CurrencyType[] = [
  "USDT-ERC20",
  "USDT-BEP20",
  "USDT-POLYGON",
  "USDT-ARBITRUM",
  "USDC-BASE",
  "USDC-ERC20",
];
const NETWORK_COUNTS = { one: 1, three: 3, six: 6 } as const;
const NETWORK_BLOCKS = Number(process.env.BENCH_NETWORK_BLOCKS ?? 200);
const NETWORK_WATCHED = Number(process.env.BENCH_NETWORK_WATCHED ?? 100_000);
/** Confirmations in sections 1 and 4: transfers are followed for 11 blocks, then handed off. */
const FOLLOW_CONFIRMATIONS = 12;

/** `count` watched addresses `synthetic(1..count)` of `network` (production). */
async function watch(database: Database, count: number, network: CurrencyType = "USDT-ERC20"): Promise<void> {
  await database.db
    .insertInto("merchants")
    .values({ id: "mer_bench", email: "bench@example.com", company_name: "Bench" })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const { sql } = await import("kysely");
  for (let start = 1; start <= count; start += 250_000) {
    const end = Math.min(count, start + 249_999);
    await sql`insert into watched_addresses (network, environment, address, derivation_index, merchant_id, purpose)
      select ${network}::text, 'production', '0x' || lpad(i::text, 40, '0'), i, 'mer_bench', 'wallet'
      from generate_series(${start}::int, ${end}::int) as i`.execute(database.db);
  }
  await sql`analyze watched_addresses`.execute(database.db);
}

/** Waits (10 s at most) for the observation of `txHash` to have `column` set; returns it. */
async function waitRow(
  database: Database,
  txHash: string,
  column: "observed_at" | "handed_off_at",
): Promise<Date> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const row = await database.db
      .selectFrom("chain_observations")
      .select(column)
      .where("tx_hash", "=", txHash)
      .executeTakeFirst();
    const at = row?.[column];
    if (at) return at;
    if (Date.now() > deadline) throw new Error(`observation ${column} not set within 10 s`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Sections 1–3: one network (USDT-ERC20 on one anvil). */
async function singleNetwork(rounds: number): Promise<void> {
  const anvil = await startAnvil();
  const token = await deployTestUsdt(anvil);
  const proxies = await Promise.all(Array.from({ length: PROVIDERS }, () => startRpcProxy(anvil.rpcUrl)));
  const adapters = proxies.map(
    (p) => new EvmChainAdapter({ rpcUrl: p.url, tokenAddress: token, timeoutMs: 12_000 }),
  );
  const adapter =
    adapters.length === 1
      ? (adapters[0] as EvmChainAdapter)
      : new ProviderPool(
          "USDT-ERC20",
          adapters.map((a, i) => ({ name: `p${i + 1}`, adapter: a })),
        );
  // Every provider's calls, as one count (the cost of a second opinion included).
  const proxy = {
    get count() {
      return proxies.reduce((n, p) => n + p.count, 0);
    },
    resetCount: () => {
      for (const p of proxies) p.resetCount();
    },
    stop: async () => {
      for (const p of proxies) await p.stop();
    },
  };
  console.log(
    `providers: ${PROVIDERS}${PROVIDERS > 1 ? " (ProviderPool: failover, cross-checked transfers)" : ""}`,
  );
  const handoff = new DepositHandoff();
  let handed = 0;
  handoff.register(async () => {
    handed += 1;
  });
  const newWatcher = (
    database: Database,
    confirmations: number,
    scan = { initialRangeBlocks: 1, maxRangeBlocks: 1 },
  ) =>
    new ChainWatcher({
      db: database.db,
      network: "USDT-ERC20",
      environment: "production",
      adapter,
      confirmations,
      scan: { pollIntervalMs: POLL_MS, ...scan },
      handoff,
      // The bench's watched addresses are synthetic: `synthetic(index)` stands for the derivation.
      derive: synthetic,
      logger,
      owner: "bench",
      start: "safe",
      maxTickMs: 60_000,
    });

  if (SECTIONS.has(1)) {
    // --- 1. cost per block -------------------------------------------------------------------
    // At the tip with 12 confirmations: each tick scans the one new block (stores its transfers to
    // watched addresses at once), follows the transfers still confirming and hands off those that
    // reached 12 confirmations. Only the ticks are timed; the mints between them are not.
    // Two databases, 1k and 1M watched addresses, are built once; the measurements alternate between
    // them, 1k then 1M, BENCH_ROUNDS times (`alternate` in support.ts), each from a fresh cursor at
    // the tip with no observations, so the host's drift shows as spread rather than as a ratio.
    const sizes = { a: 1_000, b: WATCHED };
    const databases = new Map<number, Database>();
    for (const size of [sizes.a, sizes.b]) {
      const database = await freshDatabase(ADMIN_URL, `stablegate_bench_watcher_${size}`);
      const t0 = Date.now();
      await watch(database, size);
      console.log(`watched ${size.toLocaleString("en")} addresses (insert ${Date.now() - t0} ms)`);
      databases.set(size, database);
    }
    const measureBlocks = async (size: number) => {
      const database = databases.get(size) as Database;
      await database.db.deleteFrom("chain_observations").execute();
      await database.db.deleteFrom("chain_blocks").execute();
      await database.db.deleteFrom("chain_cursors").execute();
      await database.db
        .insertInto("chain_cursors")
        .values({
          network: "USDT-ERC20",
          environment: "production",
          cursor_block: Number(await anvil.publicClient.getBlockNumber()),
        })
        .execute();
      const steady = newWatcher(database, FOLLOW_CONFIRMATIONS);
      proxy.resetCount();
      handed = 0;
      let ms = 0;
      const ticks: number[] = [];
      let following = 0;
      for (let i = 0; i < BLOCKS; i++) {
        const to =
          i % 4 === 0
            ? synthetic(1 + ((i * 7919) % 1000))
            : (`0x${"ab".repeat(19)}${(i % 256).toString(16).padStart(2, "0")}` as Hex);
        // The mint goes to anvil directly: the proxy counts the watcher's calls only.
        await mintTestUsdt(anvil, token, to, 1_000_000n + BigInt(i));
        const start = performance.now();
        const out = await steady.tick();
        const took = performance.now() - start;
        ms += took;
        ticks.push(took);
        if (out.kind !== "scanned") throw new Error(`tick ${out.kind}`);
        const waiting = await database.db
          .selectFrom("chain_observations")
          .select((eb) => eb.fn.countAll<string>().as("n"))
          .where("status", "=", "observed")
          .executeTakeFirstOrThrow();
        following = Math.max(following, Number(waiting.n));
      }
      ticks.sort((x, y) => x - y);
      return {
        msPerBlock: ms / BLOCKS,
        // The median tick: the machine is shared, and a mean follows other processes' bursts.
        medianMs: percentile(ticks, 50),
        callsPerBlock: proxy.count / BLOCKS,
        observed: handed,
        following,
      };
    };
    await measureBlocks(sizes.a); // warms up the JIT and anvil's caches; not reported
    console.log(
      `\n1. cost per scanned block at the tip (one block per tick, ${BLOCKS} blocks, a quarter with watched transfers, ${FOLLOW_CONFIRMATIONS} confirmations: unconfirmed transfers followed)`,
    );
    console.log(
      "\n| round | watched | ms/block | median tick ms | RPC calls/block | handed off | followed unconfirmed |",
    );
    console.log("|---:|---:|---:|---:|---:|---:|---:|");
    const measured = await alternate(rounds, sizes, async (size, _side, round) => {
      const c = await measureBlocks(size);
      console.log(
        `| ${round} | ${size.toLocaleString("en")} | ${c.msPerBlock.toFixed(2)} | ${c.medianMs.toFixed(2)} | ${c.callsPerBlock.toFixed(2)} | ${c.observed} | ${c.following} |`,
      );
      return c;
    });
    for (const database of databases.values()) await database.close();
    reportRounds({
      title: `time per block, ${BIG} / 1k watched, per round (1k then ${BIG}, back to back)`,
      a: "1k ms/block",
      b: `${BIG} ms/block`,
      ratioName: `ratio ${BIG} / 1k, mean time per block`,
      rounds: measured,
      value: (c) => c.msPerBlock,
      ratio: (x, y) => y / x,
      format: (x) => x.toFixed(2),
      formatRatio: (x) => x.toFixed(2),
    });
    reportRounds({
      title: `median tick, ${BIG} / 1k watched, per round`,
      a: "1k ms",
      b: `${BIG} ms`,
      ratioName: `ratio ${BIG} / 1k, median tick`,
      rounds: measured,
      value: (c) => c.medianMs,
      ratio: (x, y) => y / x,
      format: (x) => x.toFixed(2),
      formatRatio: (x) => x.toFixed(2),
    });
    const calls = reportRounds({
      title: `RPC calls per block, ${BIG} / 1k watched, per round`,
      a: "1k calls/block",
      b: `${BIG} calls/block`,
      ratioName: `ratio ${BIG} / 1k, RPC calls`,
      rounds: measured,
      value: (c) => c.callsPerBlock,
      ratio: (x, y) => y / x,
      format: (x) => x.toFixed(2),
      formatRatio: (x) => x.toFixed(2),
    });
    console.log(
      `goal: RPC calls ratio ≤ 1.2 → ${calls.max <= 1.2 ? "met in every round" : "NOT met in every round"}`,
    );
  }

  // --- 2. catch-up --------------------------------------------------------------------------
  if (SECTIONS.has(2)) {
    const database = await freshDatabase(ADMIN_URL, "stablegate_bench_watcher");
    await watch(database, 1_000);
    const from = Number(await anvil.publicClient.getBlockNumber());
    for (let i = 0; i < 20; i++) {
      for (let j = 0; j < 5; j++) await mintTestUsdt(anvil, token, synthetic(1 + i * 5 + j), 1n);
      await mineBlocks(anvil, 95);
    }
    const backlog = Number(await anvil.publicClient.getBlockNumber()) - from;
    await database.db
      .insertInto("chain_cursors")
      .values({ network: "USDT-ERC20", environment: "production", cursor_block: from })
      .execute();
    const w = newWatcher(database, 1, { initialRangeBlocks: 100, maxRangeBlocks: 1_000 });
    proxy.resetCount();
    handed = 0;
    const start = performance.now();
    let scanned = 0;
    for (;;) {
      const out = await w.tick();
      if (out.kind !== "scanned") throw new Error(`tick ${out.kind}`);
      scanned += out.scan.scannedBlocks;
      if (out.scan.cursor >= out.scan.safe) break;
    }
    const s = (performance.now() - start) / 1000;
    console.log(
      `\n2. catch-up: ${scanned} blocks (backlog ${backlog}) in ${s.toFixed(2)} s = ${(scanned / s).toFixed(0)} blocks/s, ${proxy.count} RPC calls, ${handed} handed off (goal ≥ 200 blocks/s)`,
    );
    await database.close();
  }

  // --- 3. latency ---------------------------------------------------------------------------
  if (SECTIONS.has(3)) {
    const database = await freshDatabase(ADMIN_URL, "stablegate_bench_watcher");
    await watch(database, 1_000);
    const w = newWatcher(database, 2, { initialRangeBlocks: 10, maxRangeBlocks: 100 });
    await w.tick();
    let running = true;
    const loop = (async () => {
      while (running) {
        await w.tick();
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    })();
    const latencies: number[] = [];
    const seen: number[] = [];
    for (let i = 0; i < 100; i++) {
      // Automining: the block is mined when the transaction is sent (the receipt is polled later).
      const mined = Date.now();
      const receipt = await mintTestUsdt(anvil, token, synthetic(1 + i), 5n);
      const detected = await waitRow(database, receipt.transactionHash, "observed_at");
      seen.push(detected.getTime() - mined);
      await mineBlocks(anvil, 1); // the confirming block
      const available = Date.now();
      const handedAt = await waitRow(database, receipt.transactionHash, "handed_off_at");
      latencies.push(handedAt.getTime() - available);
    }
    running = false;
    await loop;
    latencies.sort((a, b) => a - b);
    seen.sort((a, b) => a - b);
    console.log(
      `\n3. latency (poll every ${POLL_MS} ms, ${latencies.length} transfers, 2 confirmations): sent and mined → stored (detected) p50 ${percentile(seen, 50)} ms, p99 ${percentile(seen, 99)} ms; confirming block → handed off p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms (goal p50 ≤ 100 ms)`,
    );
    await database.close();
  }

  await proxy.stop();
  await anvil.stop();
}

// --- 4. several networks ----------------------------------------------------------------------

/** A request to the proxy host (the child process that runs section 4's counting proxies). */
type HostRequest = { id: number } & (
  | { op: "start"; targets: string[] }
  | { op: "counts" | "reset" | "stop" }
);
type HostReply = { id: number; urls?: string[]; counts?: number[]; error?: string };

/**
 * The child side: one `startRpcProxy` per target, counts on request. Section 4 measures the CPU of
 * the watchers' process, and the proxies are not part of what a worker runs.
 */
function proxyHost(): Promise<void> {
  const proxies: RpcProxy[] = [];
  const reply = (m: HostReply) => process.send?.(m);
  process.on("disconnect", () => process.exit(0));
  process.on("message", async (m: HostRequest) => {
    try {
      if (m.op === "start") {
        for (const target of m.targets) proxies.push(await startRpcProxy(target));
        reply({ id: m.id, urls: proxies.map((p) => p.url) });
      } else if (m.op === "counts") {
        reply({ id: m.id, counts: proxies.map((p) => p.count) });
      } else if (m.op === "reset") {
        for (const p of proxies) p.resetCount();
        reply({ id: m.id });
      } else {
        for (const p of proxies) await p.stop();
        reply({ id: m.id });
        process.disconnect();
      }
    } catch (err) {
      reply({ id: m.id, error: String(err) });
    }
  });
  return new Promise(() => {});
}

/** A counting proxy in front of each of `targets`, in a child process (this file with BENCH_PROXY_HOST=1). */
async function startProxyHost(targets: string[]) {
  const child = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, BENCH_PROXY_HOST: "1" },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let next = 0;
  const waiting = new Map<number, { resolve: (m: HostReply) => void; reject: (e: Error) => void }>();
  child.on("message", (m: HostReply) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) w?.reject(new Error(`proxy host: ${m.error}`));
    else w?.resolve(m);
  });
  child.on("exit", (code) => {
    for (const w of waiting.values()) w.reject(new Error(`proxy host exited with ${code}`));
    waiting.clear();
  });
  const ask = (request: { op: "start"; targets: string[] } | { op: "counts" | "reset" | "stop" }) =>
    new Promise<HostReply>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      child.send({ id, ...request } as HostRequest);
    });
  const urls = (await ask({ op: "start", targets })).urls ?? [];
  return {
    urls,
    /** Each proxy's RPC calls since the last reset, in the order of `targets`. */
    counts: async () => (await ask({ op: "counts" })).counts ?? [],
    reset: async () => {
      await ask({ op: "reset" });
    },
    stop: async () => {
      const exited = new Promise((r) => child.once("exit", r));
      await ask({ op: "stop" });
      await exited;
    },
  };
}

/** One network of section 4: its anvil (with its chain id), its token and the adapter through its proxy. */
interface BenchNetwork {
  network: CurrencyType;
  anvil: AnvilNode;
  token: Hex;
  scale: bigint;
  adapter: EvmChainAdapter;
  /** Mints `amount` on-chain base units to `to`: one block (automining); resolves once it is mined. */
  mint: (to: Hex, amount: bigint) => Promise<void>;
}

/**
 * `mintTestToken` with two RPC calls instead of about eight: the transaction is signed here with
 * its nonce, gas and price set (legacy, 10 gwei: above anvil's base fee, which starts at 1 gwei and
 * falls), sent raw, and its receipt polled. The mints are not what is measured; at 6 networks they
 * were most of the section's time.
 */
function minter(node: AnvilNode, token: Hex, chainId: number): (to: Hex, amount: bigint) => Promise<void> {
  const account = privateKeyToAccount(ANVIL_DEPLOYER_KEY);
  let nonce: number | undefined;
  return async (to, amount) => {
    nonce ??= await node.publicClient.getTransactionCount({
      address: account.address,
      blockTag: "pending",
    });
    const signed = await account.signTransaction({
      type: "legacy",
      chainId,
      nonce: nonce++,
      to: token,
      gas: 200_000n,
      gasPrice: 10_000_000_000n,
      data: encodeFunctionData({ abi: TEST_TOKEN.abi, functionName: "mint", args: [to, amount] }),
    });
    const hash = await node.publicClient.sendRawTransaction({ serializedTransaction: signed });
    for (;;) {
      const receipt = await node.publicClient.getTransactionReceipt({ hash }).catch(() => null);
      if (receipt) {
        if (receipt.status !== "success") throw new Error(`mint ${hash} reverted`);
        return;
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  };
}

/** What one measurement of N networks gives (per network: each network's figure, in network order). */
interface NetworksRun {
  networks: number;
  callsPerBlock: number[];
  /** Mean over the networks of RPC calls per block. */
  meanCallsPerBlock: number;
  /** CPU of this process (user + system) over the ticks, per block per network. */
  cpuMsPerBlock: number;
  /** Wall time of a step's N concurrent ticks (the slowest of them), median over the steps. */
  medianStepMs: number;
  handedOff: number[];
}

async function severalNetworks(rounds: number): Promise<void> {
  const began = performance.now();
  let mintMs = 0;
  const names = SEVERAL_NETWORKS;
  const watchedLabel =
    NETWORK_WATCHED >= 1_000 ? `${(NETWORK_WATCHED / 1_000).toLocaleString("en")}k` : String(NETWORK_WATCHED);
  // Stopped in any case: six anvils, the proxy host and the database (an error must not leave them running).
  const anvils: AnvilNode[] = [];
  let proxies: Awaited<ReturnType<typeof startProxyHost>> | undefined;
  let opened: Database | undefined;
  try {
    for (const n of names)
      anvils.push(await startAnvil(["--chain-id", String(currencyOf(n).definition.chainId)]));
    const tokens = await Promise.all(
      names.map((n, i) =>
        deployTestToken(anvils[i] as AnvilNode, {
          symbol: currencyOf(n).token,
          decimals: currencyOf(n).decimals,
        }),
      ),
    );
    const host = await startProxyHost(anvils.map((a) => a.rpcUrl));
    proxies = host;
    const chains: BenchNetwork[] = names.map((network, i) => ({
      network,
      anvil: anvils[i] as AnvilNode,
      token: tokens[i] as Hex,
      scale: chainScale(network),
      adapter: new EvmChainAdapter({
        network,
        rpcUrl: host.urls[i] as string,
        tokenAddress: tokens[i] as Hex,
        scale: chainScale(network),
        timeoutMs: 12_000,
      }),
      mint: minter(
        anvils[i] as AnvilNode,
        tokens[i] as Hex,
        currencyOf(network).definition.chainId as number,
      ),
    }));
    const database = await freshDatabase(ADMIN_URL, "stablegate_bench_watcher_networks");
    opened = database;
    const t0 = Date.now();
    for (const n of names) await watch(database, NETWORK_WATCHED, n);
    console.log(
      `\nwatched ${NETWORK_WATCHED.toLocaleString("en")} addresses on each of ${names.length} networks (${(names.length * NETWORK_WATCHED).toLocaleString("en")} rows, insert ${Date.now() - t0} ms): ${names.map((n) => `${n} (chain id ${currencyOf(n).definition.chainId})`).join(", ")}`,
    );

    // One hand-off for every watcher, as the runtime has one; it counts what each network hands off.
    const handed = new Map<CurrencyType, number>();
    const handoff = new DepositHandoff();
    handoff.register(async (_trx, t) => {
      handed.set(t.network, (handed.get(t.network) ?? 0) + 1);
    });

    const measure = async (count: number, blocks: number): Promise<NetworksRun> => {
      const followed = chains.slice(0, count);
      await database.db.deleteFrom("chain_observations").execute();
      await database.db.deleteFrom("chain_blocks").execute();
      await database.db.deleteFrom("chain_cursors").execute();
      for (const c of followed) {
        await database.db
          .insertInto("chain_cursors")
          .values({
            network: c.network,
            environment: "production",
            cursor_block: Number(await c.anvil.publicClient.getBlockNumber()),
          })
          .execute();
      }
      const watchers = followed.map(
        (c) =>
          new ChainWatcher({
            db: database.db,
            network: c.network,
            environment: "production",
            adapter: c.adapter,
            confirmations: FOLLOW_CONFIRMATIONS,
            scan: { pollIntervalMs: POLL_MS, initialRangeBlocks: 1, maxRangeBlocks: 1 },
            handoff,
            derive: synthetic,
            logger,
            owner: "bench",
            start: "safe",
            maxTickMs: 60_000,
          }),
      );
      // A first tick each (the lease, the chain-time check), before the first new block: not counted.
      for (const out of await Promise.all(watchers.map((w) => w.tick())))
        if (out.kind !== "scanned") throw new Error(`first tick ${out.kind}`);
      await host.reset();
      handed.clear();
      let cpuUs = 0;
      const steps: number[] = [];
      for (let i = 0; i < blocks; i++) {
        const to =
          i % 4 === 0
            ? synthetic(1 + ((i * 7919) % NETWORK_WATCHED))
            : (`0x${"ab".repeat(19)}${(i % 256).toString(16).padStart(2, "0")}` as Hex);
        // One block per network, to anvil directly (not through the proxy), before the timed ticks.
        const minting = performance.now();
        await Promise.all(followed.map((c) => c.mint(to, (1_000_000n + BigInt(i)) * c.scale)));
        mintMs += performance.now() - minting;
        const cpu = process.cpuUsage();
        const start = performance.now();
        const outs = await Promise.all(watchers.map((w) => w.tick()));
        steps.push(performance.now() - start);
        const used = process.cpuUsage(cpu);
        cpuUs += used.user + used.system;
        for (const out of outs) {
          if (out.kind !== "scanned") throw new Error(`tick ${out.kind}`);
          if (out.scan.scannedBlocks !== 1) throw new Error(`tick scanned ${out.scan.scannedBlocks} blocks`);
        }
      }
      const counts = (await host.counts()).slice(0, count);
      const callsPerBlock = counts.map((n) => n / blocks);
      steps.sort((x, y) => x - y);
      return {
        networks: count,
        callsPerBlock,
        meanCallsPerBlock: callsPerBlock.reduce((x, y) => x + y, 0) / count,
        cpuMsPerBlock: cpuUs / 1000 / (count * blocks),
        medianStepMs: percentile(steps, 50),
        handedOff: followed.map((c) => handed.get(c.network) ?? 0),
      };
    };

    // Warms up the JIT, the anvils and the database with all six; not reported.
    await measure(NETWORK_COUNTS.six, Math.min(NETWORK_BLOCKS, 40));
    console.log(
      `\n4. several networks in one process: 1, 3 and 6 networks at ${watchedLabel} watched addresses each, every network's watcher ticking side by side (Promise.all per step); ${NETWORK_BLOCKS} blocks per network per measurement (one per network per step, a quarter with watched transfers), ${FOLLOW_CONFIRMATIONS} confirmations; CPU = this process's user + system time over the ticks only, per block per network`,
    );
    console.log(
      "\n| round | networks | RPC calls/block per network (each) | RPC calls/block per network (mean) | CPU ms/block per network | median step ms (N ticks at once) | handed off per network |",
    );
    console.log("|---:|---:|---|---:|---:|---:|---|");
    const order = [NETWORK_COUNTS.one, NETWORK_COUNTS.three, NETWORK_COUNTS.six];
    const measured: { round: number; byCount: Map<number, NetworksRun> }[] = [];
    for (let round = 1; round <= rounds; round++) {
      const byCount = new Map<number, NetworksRun>();
      for (const count of round % 2 === 1 ? order : [...order].reverse()) {
        const r = await measure(count, NETWORK_BLOCKS);
        byCount.set(count, r);
        console.log(
          `| ${round} | ${count} | ${r.callsPerBlock.map((x) => x.toFixed(2)).join(" · ")} | ${r.meanCallsPerBlock.toFixed(2)} | ${r.cpuMsPerBlock.toFixed(2)} | ${r.medianStepMs.toFixed(2)} | ${r.handedOff.join(" · ")} |`,
        );
      }
      measured.push({ round, byCount });
    }
    const pairs = (more: number): Round<NetworksRun>[] =>
      measured.map((m) => ({
        round: m.round,
        a: m.byCount.get(NETWORK_COUNTS.one) as NetworksRun,
        b: m.byCount.get(more) as NetworksRun,
      }));
    const ratios = (more: number) => ({
      calls: reportRounds({
        title: `RPC calls per block per network, ${more} networks / 1 network, per round`,
        a: "1 network",
        b: `${more} networks`,
        ratioName: `ratio ${more}/1, RPC calls per block per network`,
        rounds: pairs(more),
        value: (r) => r.meanCallsPerBlock,
        ratio: (x, y) => y / x,
        format: (x) => x.toFixed(2),
        formatRatio: (x) => x.toFixed(2),
      }),
      cpu: reportRounds({
        title: `CPU per block per network (ms), ${more} networks / 1 network, per round`,
        a: "1 network ms",
        b: `${more} networks ms`,
        ratioName: `ratio ${more}/1, CPU per block per network`,
        rounds: pairs(more),
        value: (r) => r.cpuMsPerBlock,
        ratio: (x, y) => y / x,
        format: (x) => x.toFixed(2),
        formatRatio: (x) => x.toFixed(2),
      }),
    });
    const three = ratios(NETWORK_COUNTS.three);
    const six = ratios(NETWORK_COUNTS.six);
    const steps = ratioStats(pairs(NETWORK_COUNTS.six).map((p) => p.b.medianStepMs / p.a.medianStepMs));
    console.log(
      `\nratio 6/1, median step wall time (6 ticks at once on ${availableParallelism()} cores against 1; not part of the goal): ${formatSpread(steps)}`,
    );
    console.log(
      `3 networks / 1: RPC calls ${three.calls.median.toFixed(2)}, CPU ${three.cpu.median.toFixed(2)} (medians)`,
    );
    console.log(
      `section 4 took ${((performance.now() - began) / 1000).toFixed(0)} s (of which minting, not measured: ${(mintMs / 1000).toFixed(0)} s)`,
    );
    const met = six.calls.median <= 1.2 && six.cpu.median <= 1.2;
    console.log(
      `goal: per-network cost at 6 networks / 1 network ≤ 1.2 (RPC calls and CPU per block) → ${met ? "met" : "NOT met"} (median ratios 6/1: RPC calls ${six.calls.median.toFixed(2)}, max ${six.calls.max.toFixed(2)}; CPU ${six.cpu.median.toFixed(2)}, max ${six.cpu.max.toFixed(2)}; n = ${six.cpu.n})`,
    );
  } finally {
    await opened?.close();
    await proxies?.stop();
    for (const a of anvils) await a.stop();
  }
}

async function main() {
  if (SECTIONS.size === 0 || [...SECTIONS].some((x) => ![1, 2, 3, 4].includes(x)))
    throw new Error(
      `BENCH_SECTIONS must list sections 1 to 4, e.g. "4" or "1,2" (got ${process.env.BENCH_SECTIONS})`,
    );
  const rounds = benchRounds();
  if (SECTIONS.has(1) || SECTIONS.has(2) || SECTIONS.has(3)) await singleNetwork(rounds);
  if (SECTIONS.has(4)) await severalNetworks(rounds);
}

const run = process.env.BENCH_PROXY_HOST === "1" ? proxyHost() : main();
run.catch((err) => {
  console.error(err);
  process.exit(1);
});
