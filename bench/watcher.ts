/**
 * `npm run bench:watcher` — the chain watcher on anvil: 1. cost per block at the tip with 1k and
 * 1M watched addresses (alternating 1k, 1M over BENCH_ROUNDS rounds, default 3; every round
 * printed, the ratios' median and spread), 2. catch-up speed, 3. block → observation latency.
 *
 * Settings: BENCH_DATABASE_URL (PostgreSQL admin URL; without it, in-memory PGlite), BENCH_ROUNDS,
 * BENCH_BLOCKS (200 ticks per cost measurement), BENCH_POLL_MS (20), BENCH_WATCHED (the large
 * watched set, 1,000,000), BENCH_PROVIDERS (1: one endpoint; more: that many proxies to the node
 * behind a `ProviderPool`, issue #22 — RPC calls are counted over all of them).
 */
import type { Hex } from "viem";
import { EvmChainAdapter } from "../src/chains/evm/evm-adapter.js";
import { ProviderPool } from "../src/chains/provider-pool.js";
import type { Database } from "../src/db/database.js";
import { createLogger } from "../src/observability/logger.js";
import { DepositHandoff } from "../src/watcher/handoff.js";
import { ChainWatcher } from "../src/watcher/watcher.js";
import { deployTestUsdt, mineBlocks, mintTestUsdt, startAnvil } from "../test/support/chain/anvil.js";
import { startRpcProxy } from "../test/support/chain/rpc-proxy.js";
import { alternate, benchRounds, freshDatabase, percentile, reportRounds } from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL;
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 20);
/** Blocks per cost measurement (one tick each). */
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 200);
const ROUNDS = benchRounds();
const WATCHED = Number(process.env.BENCH_WATCHED ?? 1_000_000);
const PROVIDERS = Number(process.env.BENCH_PROVIDERS ?? 1);
const BIG = WATCHED >= 1_000_000 ? `${WATCHED / 1_000_000}M` : `${WATCHED / 1_000}k`;
const logger = createLogger("silent");
const synthetic = (i: number) => `0x${String(i).padStart(40, "0")}` as Hex;

async function watch(database: Database, count: number): Promise<void> {
  await database.db
    .insertInto("merchants")
    .values({ id: "mer_bench", email: "bench@example.com", company_name: "Bench" })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const { sql } = await import("kysely");
  for (let start = 1; start <= count; start += 250_000) {
    const end = Math.min(count, start + 249_999);
    await sql`insert into watched_addresses (network, environment, address, derivation_index, merchant_id, purpose)
      select 'USDT-ERC20', 'production', '0x' || lpad(i::text, 40, '0'), i, 'mer_bench', 'wallet'
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

async function main() {
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
      logger,
      owner: "bench",
      start: "safe",
      maxTickMs: 60_000,
    });

  // --- 1. cost per block -------------------------------------------------------------------
  // At the tip with 12 confirmations: each tick scans the one new block (stores its transfers to
  // watched addresses at once), follows the transfers still confirming and hands off those that
  // reached 12 confirmations. Only the ticks are timed; the mints between them are not.
  // Two databases, 1k and 1M watched addresses, are built once; the measurements alternate between
  // them, 1k then 1M, BENCH_ROUNDS times (`alternate` in support.ts), each from a fresh cursor at
  // the tip with no observations, so the host's drift shows as spread rather than as a ratio.
  const FOLLOW_CONFIRMATIONS = 12;
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
  const rounds = await alternate(ROUNDS, sizes, async (size, _side, round) => {
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
    rounds,
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
    rounds,
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
    rounds,
    value: (c) => c.callsPerBlock,
    ratio: (x, y) => y / x,
    format: (x) => x.toFixed(2),
    formatRatio: (x) => x.toFixed(2),
  });
  console.log(
    `goal: RPC calls ratio ≤ 1.2 → ${calls.max <= 1.2 ? "met in every round" : "NOT met in every round"}`,
  );

  // --- 2. catch-up --------------------------------------------------------------------------
  {
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
  {
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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
