/**
 * `npm run bench:ledger`: ledger postings per second (deposit credits, each in its own transaction,
 * BENCH_CONNECTIONS at once for BENCH_SECONDS) on one contended merchant account and spread over
 * 1,000 merchants, with p50/p99 latency.
 *
 * Before/after (issue 23): with BENCH_BEFORE_DIR=<a git worktree of the old code> the bench loads
 * that tree's ledger operations, migrations and merchant creation, gives it a database of its own
 * (`stablegate_bench_ledger_before`, migrated with ITS migrations: the old code runs on the old
 * schema, with the old triggers and foreign keys), and alternates old and new code (A = before,
 * B = after, BENCH_ROUNDS rounds each, `alternate` in support.ts) on the same server and machine.
 * It prints every round, the after/before ratio's median and spread, and each side's p99; each
 * side's `ledger verify` checks its journal at the end. Without BENCH_BEFORE_DIR it measures the
 * current code only.
 */
import { existsSync, symlinkSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { sql } from "kysely";
import type { Database, Db } from "../src/db/database.js";
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
/** One side of the comparison: its code and its own database, migrated by its own migrations. */
interface Variant {
  label: string;
  credit: Credit;
  database: Database;
  merchants: string[];
  verify: (db: Db) => Promise<{ ok: boolean; postings: number; entries: number }>;
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

/** The modules a side needs, from this tree or from a worktree of the old code. */
interface SideModules {
  creditDeposit: Credit;
  openDatabase: typeof openDatabase;
  migrate: (db: Db) => Promise<unknown>;
  createMerchantWithKeys: (db: Db, input: { email: string; companyName: string }) => Promise<{ id: string }>;
  verifyLedger: Variant["verify"];
}

/** The old code's modules, from a worktree (its imports resolve to this tree's node_modules). */
async function loadBefore(dir: string): Promise<SideModules> {
  const root = path.resolve(dir);
  const modules = path.join(root, "node_modules");
  if (!existsSync(modules)) {
    // A fresh `git worktree add` has no node_modules; the old code needs the same packages.
    symlinkSync(path.join(ROOT, "node_modules"), modules, "dir");
    console.log(`linked ${modules} → ${path.join(ROOT, "node_modules")}`);
  }
  const load = async <T>(...candidates: string[]): Promise<T> => {
    const file = candidates.map((c) => path.join(root, c)).find((f) => existsSync(f));
    if (!file) throw new Error(`${dir} has none of ${candidates.join(", ")}`);
    return (await import(pathToFileURL(file).href)) as T;
  };
  return {
    ...(await load<Pick<SideModules, "creditDeposit">>("src/ledger/operations.ts")),
    ...(await load<Pick<SideModules, "openDatabase">>("src/db/database.ts")),
    ...(await load<Pick<SideModules, "migrate">>("src/db/migrate.ts")),
    ...(await load<Pick<SideModules, "createMerchantWithKeys">>(
      "src/merchants/index.ts",
      "src/services/merchants.ts",
    )),
    ...(await load<Pick<SideModules, "verifyLedger">>("src/ledger/verify.ts")),
  };
}

/** A side: its database recreated and migrated, and 1,000 merchants created in it. */
async function prepareSide(label: string, name: string, m: SideModules): Promise<Variant> {
  const url = await recreateDatabase(ADMIN_URL, name);
  if (SYNCHRONOUS_COMMIT !== "on") {
    const admin = await openDatabase({ kind: "postgres", url, poolSize: 1 });
    await sql`alter database ${sql.id(name)} set synchronous_commit = ${sql.raw(SYNCHRONOUS_COMMIT)}`.execute(
      admin.db,
    );
    await admin.close();
  }
  const database = await m.openDatabase({ kind: "postgres", url, poolSize: CONNECTIONS });
  await m.migrate(database.db);
  const merchants: string[] = [];
  for (let i = 0; i < 1000; i++) {
    merchants.push(
      (
        await m.createMerchantWithKeys(database.db, {
          email: `bench${i}@example.com`,
          companyName: `Bench ${i}`,
        })
      ).id,
    );
  }
  return { label, credit: m.creditDeposit, database, merchants, verify: m.verifyLedger };
}

async function main() {
  if (!/^(on|off|local|remote_write|remote_apply)$/.test(SYNCHRONOUS_COMMIT))
    throw new Error("BENCH_SYNCHRONOUS_COMMIT must be on, off, local, remote_write or remote_apply");
  const after = await prepareSide("after (this tree)", "stablegate_bench_ledger", {
    creditDeposit,
    openDatabase,
    migrate,
    createMerchantWithKeys,
    verifyLedger,
  });
  const before: Variant | undefined = BEFORE_DIR
    ? await prepareSide(
        `before (${BEFORE_DIR})`,
        "stablegate_bench_ledger_before",
        await loadBefore(BEFORE_DIR),
      )
    : undefined;

  async function run(v: Variant, pick: (v: Variant) => string, seconds: number): Promise<Result> {
    const db = v.database.db;
    let done = 0;
    const latencies: number[] = [];
    const cpu0 = process.cpuUsage();
    const pg0 = cpuByCommand("postgres");
    const deadline = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline) {
          const merchantId = pick(v);
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

  const workloads = [
    { name: "one merchant account (contention)", pick: (v: Variant) => v.merchants[0] as string },
    {
      name: "1,000 merchants (spread)",
      pick: (v: Variant) => v.merchants[Math.floor(Math.random() * v.merchants.length)] as string,
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
  console.log("");
  for (const v of before ? [before, after] : [after]) {
    const report = await v.verify(v.database.db);
    console.log(
      `ledger verify, ${v.label}: ${report.ok ? "OK" : "MISMATCH"} (${report.postings} postings, ${report.entries} entries)`,
    );
    await v.database.close();
    if (!report.ok) process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
