/**
 * `npm run bench:webhooks` — webhook delivery throughput and commit-to-receipt latency.
 *
 * On real PostgreSQL: a local receiver (its own process) answers 200 to everything. For one, then
 * two `stablegate worker` processes:
 *  1. the receiver's ceiling: a bare undici POST loop in this process with the same bytes a worker
 *     sends (same body, same headers and header sizes, only no signing work) and the same number
 *     of requests in flight as the workers together (64 each), measured right before the workers
 *     so both see the same machine load, after a warm-up run of the same size (JIT, connections);
 *  2. throughput: a backlog of N events committed through `enqueueWebhookEvent` (4 streams, 100
 *     per transaction) and held; freshly started workers first deliver BENCH_WARMUP events each (JIT
 *     warm-up, not measured), then the backlog is released at once and drained (first → last
 *     receipt). CPU is counted from the release, for the workers, the receiver and every
 *     PostgreSQL backend but the bench's own (its release statement is not delivery work);
 *  3. latency: events committed at a steady pace while the workers idle between them; commit →
 *     receipt at the receiver (the wake-up is the outbox's NOTIFY, polling is the fallback).
 * Per worker count, the ceiling and the delivery alternate (ceiling, delivery, … BENCH_ROUNDS times:
 * `alternate` in support.ts). Prints every round's deliveries/s, its ratio to the ceiling of the
 * same round, p50/p99 commit → receipt, and the ratio's median and spread over the rounds.
 * Goal on a 2-core machine: ≥ 2,000 deliveries/s and ≥ 50 % of the ceiling.
 *
 * After loading the backlog the bench runs VACUUM ANALYZE, as autovacuum would on a normal server
 * (this machine's PostgreSQL has autovacuum off). The claim's plan needs row estimates: a
 * never-analysed table gets a bitmap scan of every due row. Without the vacuum, each round would
 * also scan the dead rows of the rounds before it; PostgreSQL's CPU per delivery rose by a third
 * over three rounds.
 *
 * Settings: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres; a
 * `stablegate_bench_webhooks` database is recreated there), BENCH_EVENTS (10000), BENCH_ROUNDS (3),
 * BENCH_WORKERS (the worker counts to run, default "1,2"), BENCH_WARMUP (5000 per worker), BENCH_CPU_PROF (a folder: the workers
 * write V8 CPU profiles there), BENCH_NODE_FLAGS (extra node flags for the workers).
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { sql } from "kysely";
import pg from "pg";
import { Agent, request } from "undici";
import { openDatabase } from "../src/db/database.js";
import { migrate } from "../src/db/migrate.js";
import { newId } from "../src/domain/ids.js";
import { SecretBox } from "../src/lib/secret-box.js";
import { createMerchantWithKeys } from "../src/merchants/index.js";
import { enqueueWebhookEvent, WEBHOOK_CHANNEL } from "../src/webhooks/outbox.js";
import { serializeWebhookBody, webhookMessage } from "../src/webhooks/payload.js";
import { generateWebhookSecret, setWebhookUrl } from "../src/webhooks/secrets.js";
import { signatureHeaders } from "../src/webhooks/signing.js";
import {
  alternate,
  benchRounds,
  cpuOf,
  formatSpread,
  MAIN,
  percentile,
  ROOT,
  type Round,
  ratioStats,
  recreateDatabase,
  reportRounds,
} from "./support.js";

const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? "1,2").split(",").map(Number);
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const ROUNDS = benchRounds();
const CONCURRENCY = 64; // a worker's attempts in flight (assembleDelivery default)
const KEY = randomBytes(32).toString("hex");
const DB_NAME = "stablegate_bench_webhooks";
const BENCH_APP = "stablegate-bench";
/**
 * Events each fresh worker delivers before the measured backlog (JIT warm-up). With 2,000 for a
 * pair of workers, each one's CPU per delivery was still ~50 % above its warm figure.
 */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5_000);

type FromReceiver =
  | { port: number }
  | { receipts: [string, number][]; count: number }
  | { unique: number; count: number };

// ── receiver mode: `tsx bench/webhooks.ts receiver` (a child process) ─────────────────────────
function runReceiver() {
  let receipts = new Map<string, number>();
  let count = 0;
  const server = http.createServer((req, res) => {
    req.on("data", () => {});
    req.on("end", () => {
      count++;
      const id = req.headers["webhook-id"];
      if (typeof id === "string" && !receipts.has(id)) receipts.set(id, Date.now());
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => process.send?.({ port: (server.address() as AddressInfo).port }));
  process.on("message", (msg: string) => {
    if (msg === "report") process.send?.({ receipts: [...receipts.entries()], count });
    // Cheap progress while a drain runs: the full report (every receipt) is asked for only at the
    // end, so the bench's own polling does not take CPU from the workers it measures.
    if (msg === "progress") process.send?.({ unique: receipts.size, count });
    if (msg === "reset") {
      receipts = new Map();
      count = 0;
      process.send?.({ receipts: [], count: 0 });
    }
    if (msg === "exit") server.close(() => process.exit(0));
  });
}

function ask(child: ChildProcess, msg: string): Promise<FromReceiver> {
  return new Promise((resolve) => {
    child.once("message", (m) => resolve(m as FromReceiver));
    child.send(msg);
  });
}

async function main() {
  const databaseUrl = await recreateDatabase(ADMIN_URL, DB_NAME);
  // The bench's own connections are named so their CPU (loading and releasing the backlog) is not
  // counted as the workers' PostgreSQL work.
  const database = await openDatabase({
    kind: "postgres",
    url: databaseUrl,
    poolSize: 8,
    applicationName: BENCH_APP,
  });
  await migrate(database.db);
  const db = database.db;
  const box = new SecretBox(KEY);
  const dataDir = await mkdtemp(path.join(tmpdir(), "sg-bench-webhooks-"));

  const receiver = fork(import.meta.filename, ["receiver"], { execArgv: ["--import", "tsx"], cwd: ROOT });
  const { port } = (await new Promise((r) => receiver.once("message", r))) as { port: number };
  const url = `http://127.0.0.1:${port}/hook`;

  const merchant = await createMerchantWithKeys(
    db,
    { email: `bench-${Date.now()}@example.com`, companyName: "Bench" },
    undefined,
    box,
  );
  await setWebhookUrl(db, box, merchant.id, "sandbox", url);

  const sample = (i: number) => ({
    type: "deposit",
    transactionId: `tx_bench_${i}`,
    clientId: merchant.id,
    amount: 12.5,
    fee: 0,
    netAmount: 12.5,
    actualBalance: 12.5,
    currencyType: "USDT-TRC20",
    network: "USDT-TRC20",
    status: "confirmed",
    createdAt: new Date().toISOString(),
    confirmedAt: new Date().toISOString(),
    blockchainTxHash: "ab".repeat(32),
    walletAddress: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
  });

  // ── the receiver's ceiling: a bare undici POST loop with a worker's exact bytes ──
  const bareTx = "tx_bench_000000";
  const bareBody = serializeWebhookBody(webhookMessage("deposit", "confirmed"), sample(0), bareTx, "sandbox");
  const bareHeaders = {
    "content-type": "application/json",
    "user-agent": "stablegate-webhooks/1.0",
    "x-webhook-source": "stablegate",
    "x-transaction-id": bareTx,
    ...signatureHeaders([generateWebhookSecret()], newId("whe"), Math.floor(Date.now() / 1000), bareBody),
  };
  async function bare(
    inFlight: number,
  ): Promise<{ rate: number; cpu: { client: number; receiver: number } }> {
    const agent = new Agent({ connections: inFlight });
    let next = 0;
    const loop = (until: number) =>
      Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < until) {
            const i = next++;
            const res = await request(url, {
              method: "POST",
              dispatcher: agent,
              body: bareBody,
              headers: { ...bareHeaders, "webhook-id": `whe_bare${String(i).padStart(18, "0")}` },
            });
            await res.body.text();
          }
        }),
      );
    // A whole unmeasured run first (JIT, connections open), then the measured one.
    await loop(EVENTS);
    await ask(receiver, "reset");
    next = 0;
    const cpu0 = process.cpuUsage();
    const receiver0 = cpuOf(receiver.pid);
    const t0 = performance.now();
    await loop(EVENTS);
    const rate = EVENTS / ((performance.now() - t0) / 1000);
    const used = process.cpuUsage(cpu0);
    const cpu = {
      client: (used.user + used.system) / EVENTS,
      receiver: (cpuOf(receiver.pid) - receiver0) / EVENTS,
    };
    await agent.close();
    return { rate, cpu };
  }

  // ── 2. workers ──
  let seq = 0;
  /** Commits `n` events in transactions of `perTx`; returns id → commit time. */
  async function commit(
    n: number,
    perTx: number,
    streams: number,
    pauseMs = 0,
  ): Promise<Map<string, number>> {
    const committedAt = new Map<string, number>();
    let made = 0;
    await Promise.all(
      Array.from({ length: streams }, async () => {
        while (made < n) {
          const k = Math.min(perTx, n - made);
          made += k;
          const ids = await db.transaction().execute(async (trx) => {
            const out: string[] = [];
            for (let i = 0; i < k; i++) {
              const s = sample(++seq);
              const { webhookEventId } = await enqueueWebhookEvent(trx, {
                merchantId: merchant.id,
                environment: "sandbox",
                transactionId: s.transactionId,
                type: "deposit",
                transactionStatus: "confirmed",
                data: s,
              });
              out.push(webhookEventId);
            }
            return out;
          });
          const at = Date.now();
          for (const id of ids) committedAt.set(id, at);
          if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
        }
      }),
    );
    return committedAt;
  }
  /** Waits until the receiver has `n` distinct events (cheap polling: counts only). */
  async function received(n: number): Promise<void> {
    while (((await ask(receiver, "progress")) as { unique: number }).unique < n)
      await new Promise((res) => setTimeout(res, 50));
  }
  async function receiptsOf(
    ids: Map<string, number>,
  ): Promise<{ at: number[]; count: number; latencies: number[] }> {
    for (;;) {
      await received(ids.size);
      const report = (await ask(receiver, "report")) as { receipts: [string, number][]; count: number };
      const mine = report.receipts.filter(([id]) => ids.has(id));
      if (mine.length >= ids.size) {
        return {
          at: mine.map(([, at]) => at).sort((a, b) => a - b),
          count: report.count,
          latencies: mine.map(([id, at]) => at - (ids.get(id) as number)).sort((a, b) => a - b),
        };
      }
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  const results: {
    round: number;
    workers: number;
    bare: number;
    bareCpu: { client: number; receiver: number };
    cpu: { workers: number; postgres: number; receiver: number };
    rate: number;
    p50: number;
    p99: number;
    dup: number;
  }[] = [];
  const PACED = Math.min(EVENTS, 3000);
  /** One drain by `workers` fresh worker processes (throughput, CPU) and the paced latency run. */
  async function deliver(workers: number, round: number) {
    await ask(receiver, "reset");
    // Throughput: a backlog of N committed events, held (due in an hour) until the workers are
    // up, then released at once; first → last receipt. CPU is counted from the release.
    const backlog = await commit(EVENTS, 100, 4);
    await sql`update webhook_due set next_attempt_at = now() + interval '1 hour'`.execute(db);
    await sql`vacuum analyze`.execute(db);
    const children: ChildProcess[] = [];
    for (let w = 0; w < workers; w++) {
      children.push(
        spawn(
          process.execPath,
          [
            ...(process.env.BENCH_CPU_PROF
              ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
              : []),
            ...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(" ") : []),
            "--import",
            "tsx",
            MAIN,
            "worker",
          ],
          {
            cwd: ROOT,
            stdio: ["ignore", "ignore", "inherit"],
            env: {
              PATH: process.env.PATH ?? "",
              HOME: process.env.HOME ?? "/tmp",
              DATABASE_URL: databaseUrl,
              SECRET_ENCRYPTION_KEY: KEY,
              SSRF_ALLOW_CIDRS: "127.0.0.0/8",
              LOG_LEVEL: "warn",
              // One seed for every worker: the database refuses a process with other account keys.
              MASTER_MNEMONIC: "test test test test test test test test test test test junk",
              DATA_DIR: path.join(dataDir, `r${round}-w${workers}-${w}`),
            },
          },
        ),
      );
    }
    for (;;) {
      const up = await db.selectFrom("worker_heartbeats").select("pid").execute();
      if (up.length >= workers) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Warm-up: fresh processes run their first thousands of attempts in V8's interpreter and
    // baseline tiers; steady-state throughput is what is measured, so they deliver WARMUP events
    // each (due at once) before the backlog is released.
    if (WARMUP > 0) {
      await receiptsOf(await commit(WARMUP * workers, 100, 2));
      await ask(receiver, "reset");
    }
    // PostgreSQL: every backend of this database but the bench's own (pools open more
    // connections under load; a backend that did not exist at the start counts from zero).
    const backendsCpu = async () =>
      new Map(
        (
          await sql<{
            pid: number;
          }>`select pid from pg_stat_activity where datname = current_database() and application_name <> ${BENCH_APP}`.execute(
            db,
          )
        ).rows.map((r) => [r.pid, cpuOf(r.pid)] as const),
      );
    const cpuNow = async () => ({
      workers: children.reduce((sum, c) => sum + cpuOf(c.pid), 0),
      postgres: await backendsCpu(),
      receiver: cpuOf(receiver.pid),
    });
    const before = await cpuNow();
    await db.transaction().execute(async (trx) => {
      await sql`update webhook_due set next_attempt_at = now()`.execute(trx);
      await sql`select pg_notify(${WEBHOOK_CHANNEL}, '')`.execute(trx);
    });
    await received(backlog.size);
    const after = await cpuNow();
    const drained = await receiptsOf(backlog);
    let postgresCpu = 0;
    for (const [pid, used] of after.postgres) postgresCpu += used - (before.postgres.get(pid) ?? 0);
    const rate = EVENTS / (((drained.at.at(-1) as number) - (drained.at[0] as number)) / 1000);
    // Latency: events committed at a steady pace (20 per transaction, 2 streams, 10 ms pauses)
    // while the workers run; commit → receipt at the receiver.
    await ask(receiver, "reset");
    const paced = await commit(PACED, 20, 2, 10);
    const lat = await receiptsOf(paced);
    const delivered = {
      cpu: {
        workers: (after.workers - before.workers) / EVENTS,
        postgres: postgresCpu / EVENTS,
        receiver: (after.receiver - before.receiver) / EVENTS,
      },
      rate,
      p50: percentile(lat.latencies, 50),
      p99: percentile(lat.latencies, 99),
      dup: drained.count - EVENTS + (lat.count - PACED),
    };
    for (const c of children) c.kill("SIGTERM");
    await Promise.all(
      children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once("exit", r)))),
    );
    await db.deleteFrom("worker_heartbeats").execute();
    return delivered;
  }
  // Per worker count, ceiling and delivery alternate (ceiling, delivery, ceiling, delivery …:
  // `alternate` in support.ts), each pair back to back, so each round's ratio sees one machine.
  type Delivered = Awaited<ReturnType<typeof deliver>>;
  /** A run of either side: its rate, and the ceiling's CPU or the delivery's figures. */
  type Measured = { rate: number; bareCpu?: { client: number; receiver: number }; delivered?: Delivered };
  const ratios: { workers: number; rounds: Round<Measured>[] }[] = [];
  for (const workers of WORKER_COUNTS) {
    const rounds = await alternate(
      ROUNDS,
      { a: "ceiling", b: "delivery" } as const,
      async (which, _side, round): Promise<Measured> => {
        if (which === "ceiling") {
          const c = await bare(CONCURRENCY * workers);
          return { rate: c.rate, bareCpu: c.cpu };
        }
        const d = await deliver(workers, round);
        return { rate: d.rate, delivered: d };
      },
    );
    ratios.push({ workers, rounds });
    for (const r of rounds) {
      const d = r.b.delivered as Delivered;
      results.push({
        round: r.round,
        workers,
        bare: r.a.rate,
        bareCpu: r.a.bareCpu as { client: number; receiver: number },
        ...d,
      });
    }
  }

  receiver.send("exit");
  // How many updates were HOT — no index entries written: the results' event updates, and the
  // claims' queue updates (the bench's own hold and release of each backlog update every queue row
  // twice, not HOT). PostgreSQL reports table statistics within a second or so of each transaction.
  await new Promise((r) => setTimeout(r, 1500));
  const hot = await sql<{ relname: string; upd: string; hot: string }>`
    select relname, n_tup_upd::text as upd, n_tup_hot_upd::text as hot from pg_stat_user_tables
    where relname in ('webhook_events', 'webhook_due') order by relname desc`.execute(db);
  await database.close();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${DB_NAME} with (force)`);
  await admin.end();
  await rm(dataDir, { recursive: true, force: true });

  console.log(`\nwebhook delivery, ${EVENTS} events, local receiver (own process), PostgreSQL`);
  for (const h of hot.rows)
    console.log(
      `${h.relname} updates: ${h.upd}, of which HOT (no index entries): ${h.hot} (${((100 * Number(h.hot)) / Math.max(1, Number(h.upd))).toFixed(0)} %)`,
    );
  console.log(
    "ceiling: a bare undici POST loop, same receiver, same bytes, same requests in flight as the workers together",
  );
  console.log(
    `deliveries/s: a backlog of ${EVENTS} drained (first → last receipt); latency: ${PACED} events committed at a steady pace\n`,
  );
  console.log(
    "round | workers | in flight | ceiling req/s | deliveries/s | % of ceiling | commit→receipt p50 | p99     | duplicates",
  );
  for (const r of results) {
    console.log(
      `${String(r.round).padEnd(5)} | ${String(r.workers).padEnd(7)} | ${String(CONCURRENCY * r.workers).padStart(9)} | ${r.bare.toFixed(0).padStart(13)} | ${r.rate.toFixed(0).padStart(12)} | ${((100 * r.rate) / r.bare).toFixed(0).padStart(11)}% | ${`${r.p50} ms`.padStart(18)} | ${`${r.p99} ms`.padEnd(7)} | ${r.dup}`,
    );
  }
  // On a shared machine the rates move with other load; CPU time per request moves much less.
  // "2-core capacity" = 2 s of CPU / CPU per request: what the same work would do on two idle cores.
  console.log("\nCPU per request (µs; Linux /proc, 10 ms ticks) — ceiling loop vs delivery");
  console.log(
    "round | workers | ceiling: client + receiver | delivery: workers + PostgreSQL + receiver | 2-core capacity ceiling / delivery | ratio",
  );
  for (const r of results) {
    const bareTotal = r.bareCpu.client + r.bareCpu.receiver;
    const total = r.cpu.workers + r.cpu.postgres + r.cpu.receiver;
    const capBare = 2e6 / bareTotal;
    const cap = 2e6 / total;
    console.log(
      `${String(r.round).padEnd(5)} | ${String(r.workers).padEnd(7)} | ${`${r.bareCpu.client.toFixed(0)} + ${r.bareCpu.receiver.toFixed(0)} = ${bareTotal.toFixed(0)}`.padStart(26)} | ${`${r.cpu.workers.toFixed(0)} + ${r.cpu.postgres.toFixed(0)} + ${r.cpu.receiver.toFixed(0)} = ${total.toFixed(0)}`.padStart(41)} | ${`${capBare.toFixed(0)} / ${cap.toFixed(0)}`.padStart(34)} | ${((100 * cap) / capBare).toFixed(0)}%`,
    );
  }
  // Single rounds swing with the host (the ceiling alone moved by half within an hour here): the
  // median of the rounds' ratios, with its spread, is the figure to compare.
  for (const { workers, rounds } of ratios) {
    reportRounds({
      title: `${workers} worker${workers > 1 ? "s" : ""}: deliveries/s against the ceiling of the same round`,
      a: "ceiling req/s",
      b: "deliveries/s",
      ratioName: `% of ceiling, ${workers} worker${workers > 1 ? "s" : ""}`,
      rounds,
      value: (r) => r.rate,
      ratio: (a, b) => (100 * b) / a,
      formatRatio: (x) => x.toFixed(0),
    });
    const cpu = ratioStats(
      rounds.map((r) => {
        const c = (r.b.delivered as Delivered).cpu;
        return c.workers + c.postgres + c.receiver;
      }),
    );
    console.log(
      `CPU µs per delivery (workers + PostgreSQL + receiver): ${formatSpread(cpu, (x) => x.toFixed(0))}`,
    );
  }
}

if (process.argv[2] === "receiver") runReceiver();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
