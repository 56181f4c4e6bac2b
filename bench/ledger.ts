/**
 * `npm run bench:ledger`: ledger postings per second (deposit credits, each in its own transaction,
 * BENCH_CONNECTIONS at once for BENCH_SECONDS) on one contended merchant account and spread over
 * 1,000 merchants, with p50/p99 latency.
 *
 * Before/after (issue 23): with BENCH_BEFORE_DIR=<a git worktree of the old code> the bench loads
 * that tree's `src/ledger/operations.ts` and alternates old and new code (A = before, B = after,
 * BENCH_ROUNDS rounds each, `alternate` in support.ts) on the same database, pool and machine, and
 * prints every round, the after/before ratio's median and spread, and each side's p99. Both write
 * the same tables (the old code simply does not call the new function), and `ledger verify` checks
 * the whole journal at the end. Without BENCH_BEFORE_DIR it measures the current code only.
 */
import { existsSync, symlinkSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { sql } from "kysely";
import type { Db } from "../src/db/database.js";
import { openDatabase } from "../src/db/database.js";
import { migrate } from "../src/db/migrate.js";
import { newId } from "../src/domain/ids.js";
import { UNIT } from "../src/domain/money.js";
import { creditDeposit } from "../src/ledger/operations.js";
import type { PostingContext, PostResult } from "../src/ledger/post.js";
import { verifyLedger } from "../src/ledger/verify.js";
import { createMerchantWithKeys } from "../src/merchants/index.js";
import {
  alternate,
  benchRounds,
  cpuBetween,
  cpuByCommand,
  formatSpread,
  percentile,
  ROOT,
  type Round,
  ratioStats,
  recreateDatabase,
} from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const BEFORE_DIR = process.env.BENCH_BEFORE_DIR;
/**
 * BENCH_SYNCHRONOUS_COMMIT=off (a diagnostic, never a result): commits stop waiting for the WAL
 * flush. On one hot account every posting holds the row lock until its commit is flushed, so on a
 * slow or busy disk the flush, not the code, sets the rate; this shows what the code alone does.
 */
const SYNCHRONOUS_COMMIT = process.env.BENCH_SYNCHRONOUS_COMMIT ?? "on";
const CPU_COLUMN = "CPU µs/posting (Node + PostgreSQL)";

type Credit = (trx: Db, ctx: PostingContext, received: bigint, fee: bigint) => Promise<PostResult>;
interface Variant {
  label: string;
  credit: Credit;
}
interface Result {
  perSecond: number;
  p50: number;
  p99: number;
  done: number;
  /** CPU µs per posting: this process (Node) and every `postgres` process on the machine. */
  nodeCpu: number;
  pgCpu: number;
}

/** The old code's `creditDeposit`, from a worktree (its imports resolve to this tree's node_modules). */
async function loadBefore(dir: string): Promise<Credit> {
  const root = path.resolve(dir);
  const modules = path.join(root, "node_modules");
  if (!existsSync(modules)) {
    // A fresh `git worktree add` has no node_modules; the old code needs the same packages.
    symlinkSync(path.join(ROOT, "node_modules"), modules, "dir");
    console.log(`linked ${modules} → ${path.join(ROOT, "node_modules")}`);
  }
  const mod = (await import(pathToFileURL(path.join(root, "src/ledger/operations.ts")).href)) as {
    creditDeposit: Credit;
  };
  return mod.creditDeposit;
}

async function main() {
  const url = await recreateDatabase(ADMIN_URL, "stablegate_bench_ledger");
  if (!/^(on|off|local|remote_write|remote_apply)$/.test(SYNCHRONOUS_COMMIT))
    throw new Error("BENCH_SYNCHRONOUS_COMMIT must be on, off, local, remote_write or remote_apply");
  if (SYNCHRONOUS_COMMIT !== "on") {
    const admin = await openDatabase({ kind: "postgres", url, poolSize: 1 });
    await sql`alter database stablegate_bench_ledger set synchronous_commit = ${sql.raw(SYNCHRONOUS_COMMIT)}`.execute(
      admin.db,
    );
    await admin.close();
  }
  const database = await openDatabase({ kind: "postgres", url, poolSize: CONNECTIONS });
  const db = database.db;
  await migrate(db);
  const merchants: string[] = [];
  for (let i = 0; i < 1000; i++) {
    merchants.push(
      (await createMerchantWithKeys(db, { email: `bench${i}@example.com`, companyName: `Bench ${i}` })).id,
    );
  }
  const after: Variant = { label: "after (this tree)", credit: creditDeposit };
  const before: Variant | undefined = BEFORE_DIR
    ? { label: `before (${BEFORE_DIR})`, credit: await loadBefore(BEFORE_DIR) }
    : undefined;

  async function run(v: Variant, pick: () => string, seconds: number): Promise<Result> {
    let done = 0;
    const latencies: number[] = [];
    const cpu0 = process.cpuUsage();
    const pg0 = cpuByCommand("postgres");
    const deadline = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline) {
          const merchantId = pick();
          const started = performance.now();
          await db.transaction().execute((trx) =>
            v.credit(
              trx,
              {
                merchantId,
                environment: "sandbox",
                currencyType: "USDT-TRC20",
                transactionId: newId("tx"),
              },
              UNIT,
              UNIT / 100n,
            ),
          );
          latencies.push(performance.now() - started);
          done++;
        }
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    const pgCpu = cpuBetween(pg0, cpuByCommand("postgres"));
    latencies.sort((a, b) => a - b);
    return {
      perSecond: done / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      done,
      nodeCpu: (cpu.user + cpu.system) / done,
      pgCpu: pgCpu / done,
    };
  }

  const hot = merchants[0] as string;
  const workloads = [
    { name: "one merchant account (contention)", pick: () => hot },
    {
      name: "1,000 merchants (spread)",
      pick: () => merchants[Math.floor(Math.random() * merchants.length)] as string,
    },
  ];
  // Warm-up (prepared statements, PL/pgSQL plan cache, the old code's system-account cache).
  for (const v of before ? [before, after] : [after]) await run(v, workloads[1]!.pick, 1);

  console.log(
    `\nledger postings, PostgreSQL, ${CONNECTIONS} concurrent transactions, ${SECONDS} s per run, synchronous_commit ${SYNCHRONOUS_COMMIT}\n`,
  );
  const fmt = (r: Result) =>
    `${r.perSecond.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.done} | ${r.nodeCpu.toFixed(0)} + ${r.pgCpu.toFixed(0)}`;
  if (!before) {
    console.log(`| workload | postings/s | p50 ms | p99 ms | postings | ${CPU_COLUMN} |`);
    console.log("|---|---:|---:|---:|---:|---:|");
    const results: Result[] = [];
    for (const w of workloads) {
      const r = await run(after, w.pick, SECONDS);
      results.push(r);
      console.log(`| ${w.name} | ${fmt(r)} |`);
    }
    console.log(
      `\nspread / contention: ${((results[1]?.perSecond ?? 0) / (results[0]?.perSecond ?? 1)).toFixed(2)}x`,
    );
  } else {
    const rounds = benchRounds();
    const summary: string[] = [];
    for (const w of workloads) {
      console.log(`\n${w.name}: A = ${before.label}, B = ${after.label}\n`);
      console.log(`| round | side | postings/s | p50 ms | p99 ms | postings | ${CPU_COLUMN} |`);
      console.log("|---:|---|---:|---:|---:|---:|---:|");
      const done: Round<Result>[] = await alternate(
        rounds,
        { a: before, b: after },
        (v) => run(v, w.pick, SECONDS),
        (r) => {
          console.log(`| ${r.round} | before | ${fmt(r.a)} |`);
          console.log(`| ${r.round} | after | ${fmt(r.b)} |`);
        },
      );
      const ratio = ratioStats(done.map((r) => r.b.perSecond / r.a.perSecond));
      const p99 = (side: "a" | "b") => ratioStats(done.map((r) => r[side].p99));
      const ms = (x: number) => `${x.toFixed(1)} ms`;
      summary.push(
        `${w.name}:\n  after / before postings/s: ${formatSpread(ratio)} (goal ≥ 2)\n` +
          `  p99 before: ${formatSpread(p99("a"), ms)}\n  p99 after:  ${formatSpread(p99("b"), ms)}`,
      );
    }
    console.log(`\n${summary.join("\n")}`);
  }
  const report = await verifyLedger(db);
  console.log(
    `\nledger verify: ${report.ok ? "OK" : "MISMATCH"} (${report.postings} postings, ${report.entries} entries)`,
  );
  await database.close();
  if (!report.ok) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
