/**
 * `npm run bench:webhooks` — webhook delivery throughput and commit-to-receipt latency.
 *
 * On real PostgreSQL: a local receiver (its own process) answers 200 to everything. First the
 * receiver's ceiling: a bare undici POST loop (same body size, same concurrency as a worker) in
 * this process. Then N events are committed through `enqueueWebhookEvent` (4 concurrent streams,
 * 100 events per transaction) while one, then two `stablegate worker` processes deliver them.
 * Prints deliveries/s (first commit → last receipt), p50/p99 from commit to receipt, and the
 * ratio to the bare ceiling. Goal on a 2-core machine: ≥ 2,000 deliveries/s and ≥ 50 % of the
 * ceiling.
 *
 * Settings: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres; a
 * `stablegate_bench_webhooks` database is recreated there), BENCH_EVENTS (10000).
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { Agent, request } from "undici";
import { openDatabase } from "../src/db/database.js";
import { migrate } from "../src/db/migrate.js";
import { SecretBox } from "../src/lib/secret-box.js";
import { createMerchantWithKeys } from "../src/services/merchants.js";
import { enqueueWebhookEvent } from "../src/webhooks/outbox.js";
import { setWebhookUrl } from "../src/webhooks/secrets.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const MAIN = path.join(ROOT, "src", "main.ts");
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const CONCURRENCY = 64; // a worker's attempts in flight (WebhookDelivery default)
const KEY = randomBytes(32).toString("hex");
const DB_NAME = "stablegate_bench_webhooks";

type FromReceiver = { port: number } | { receipts: [string, number][]; count: number };

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

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function main() {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${DB_NAME} with (force)`);
  await admin.query(`create database ${DB_NAME}`);
  const u = new URL(ADMIN_URL);
  u.pathname = `/${DB_NAME}`;
  const databaseUrl = u.toString();
  const database = await openDatabase({ kind: "postgres", url: databaseUrl, poolSize: 8 });
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

  // ── 1. the receiver's ceiling: a bare undici POST loop ──
  const body = JSON.stringify({ success: true, message: "Deposit confirmed", data: sample(0) });
  const agent = new Agent({ connections: 128 });
  await ask(receiver, "reset");
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < EVENTS) {
        const i = next++;
        const res = await request(url, {
          method: "POST",
          dispatcher: agent,
          body,
          headers: {
            "content-type": "application/json",
            "webhook-id": `bare_${i}`,
            "x-webhook-signature": "sha256=x",
          },
        });
        await res.body.text();
      }
    }),
  );
  const bareRate = EVENTS / ((performance.now() - t0) / 1000);
  await agent.close();

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
  async function receiptsOf(
    ids: Map<string, number>,
  ): Promise<{ at: number[]; count: number; latencies: number[] }> {
    for (;;) {
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

  const results: { workers: number; rate: number; p50: number; p99: number; dup: number }[] = [];
  const PACED = Math.min(EVENTS, 3000);
  for (const workers of [1, 2]) {
    await ask(receiver, "reset");
    // Throughput: a backlog of N committed events, drained by freshly started workers
    // (first receipt → last receipt, so process start-up is not counted).
    const backlog = await commit(EVENTS, 100, 4);
    const children: ChildProcess[] = [];
    for (let w = 0; w < workers; w++) {
      children.push(
        spawn(process.execPath, ["--import", "tsx", MAIN, "worker"], {
          cwd: ROOT,
          stdio: ["ignore", "ignore", "inherit"],
          env: {
            PATH: process.env.PATH ?? "",
            HOME: process.env.HOME ?? "/tmp",
            DATABASE_URL: databaseUrl,
            SECRET_ENCRYPTION_KEY: KEY,
            SSRF_ALLOW_CIDRS: "127.0.0.0/8",
            LOG_LEVEL: "warn",
            DATA_DIR: path.join(dataDir, `w${workers}-${w}`),
          },
        }),
      );
    }
    const drained = await receiptsOf(backlog);
    const rate = EVENTS / (((drained.at.at(-1) as number) - (drained.at[0] as number)) / 1000);
    // Latency: events committed at a steady pace (20 per transaction, 2 streams, 10 ms pauses)
    // while the workers run; commit → receipt at the receiver.
    await ask(receiver, "reset");
    const paced = await commit(PACED, 20, 2, 10);
    const lat = await receiptsOf(paced);
    results.push({
      workers,
      rate,
      p50: percentile(lat.latencies, 50),
      p99: percentile(lat.latencies, 99),
      dup: drained.count - EVENTS + (lat.count - PACED),
    });
    for (const c of children) c.kill("SIGTERM");
    await Promise.all(
      children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once("exit", r)))),
    );
    await db.deleteFrom("worker_heartbeats").execute();
  }

  receiver.send("exit");
  await database.close();
  await admin.query(`drop database if exists ${DB_NAME} with (force)`);
  await admin.end();
  await rm(dataDir, { recursive: true, force: true });

  console.log(`\nwebhook delivery, ${EVENTS} events, local receiver (own process), PostgreSQL\n`);
  console.log(`bare undici POST loop (${CONCURRENCY} in flight): ${bareRate.toFixed(0)} req/s (the ceiling)`);
  console.log(
    `deliveries/s: a backlog of ${EVENTS} drained (first → last receipt); latency: ${PACED} events committed at a steady pace`,
  );
  console.log("workers | deliveries/s | % of ceiling | commit→receipt p50 | p99     | duplicates");
  for (const r of results) {
    console.log(
      `${String(r.workers).padEnd(7)} | ${r.rate.toFixed(0).padStart(12)} | ${((100 * r.rate) / bareRate).toFixed(0).padStart(11)}% | ${`${r.p50} ms`.padStart(18)} | ${`${r.p99} ms`.padEnd(7)} | ${r.dup}`,
    );
  }
}

if (process.argv[2] === "receiver") runReceiver();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
