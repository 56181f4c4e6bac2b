/**
 * `npm run bench:idle` — what an idle `stablegate serve` costs: nobody calls it, nothing is due.
 *
 * Two runs of `serve` with the sandbox simulators, each left alone for BENCH_IDLE_SECONDS (30)
 * after a BENCH_IDLE_SETTLE_SECONDS (15) start-up:
 *  1. embedded defaults (PGlite in a temporary DATA_DIR): the process's CPU, database included;
 *  2. PostgreSQL (`stablegate_bench_idle` recreated on BENCH_DATABASE_URL, default
 *     postgres://postgres@127.0.0.1:5432/postgres): the process's CPU, the CPU of every PostgreSQL
 *     process on the machine, and transactions per second (`pg_stat_database.xact_commit`; a statement outside
 *     a transaction counts as one).
 * A self-hosted gateway mostly waits: this is its floor on a small machine.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import {
  cpuBetween,
  cpuByCommand,
  cpuOf,
  freePort,
  recreateDatabase,
  startServe,
  stopChild,
} from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const SETTLE_SECONDS = Number(process.env.BENCH_IDLE_SETTLE_SECONDS ?? 15);
const DB_NAME = "stablegate_bench_idle";

interface Reading {
  label: string;
  cpuShare: number;
  postgresShare?: number;
  transactionsPerSecond?: number;
}

const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

async function commits(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ n: string }>(
      "select xact_commit::text as n from pg_stat_database where datname = current_database()",
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    await c.end();
  }
}

async function run(label: string, databaseUrl: string | undefined): Promise<Reading> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "stablegate-bench-idle-"));
  const port = await freePort();
  const child = await startServe({
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    PORT: String(port),
    SANDBOX_PORT: String(await freePort()),
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  try {
    await sleep(SETTLE_SECONDS);
    const cpu0 = cpuOf(child.pid);
    const pg0 = databaseUrl ? cpuByCommand("postgres") : undefined;
    const tx0 = databaseUrl ? await commits(databaseUrl) : 0;
    await sleep(SECONDS);
    const cpu1 = cpuOf(child.pid);
    const pg1 = databaseUrl ? cpuByCommand("postgres") : undefined;
    // The reading's own connection commits once; leave it out.
    const tx1 = databaseUrl ? (await commits(databaseUrl)) - 1 : 0;
    const micros = SECONDS * 1e6;
    return {
      label,
      cpuShare: (cpu1 - cpu0) / micros,
      ...(pg0 && pg1 ? { postgresShare: cpuBetween(pg0, pg1) / micros } : {}),
      ...(databaseUrl ? { transactionsPerSecond: (tx1 - tx0) / SECONDS } : {}),
    };
  } finally {
    await stopChild(child);
    await rm(dataDir, { recursive: true, force: true });
  }
}

const readings = [
  await run("embedded (PGlite)", undefined),
  await run("PostgreSQL", await recreateDatabase(ADMIN_URL, DB_NAME)),
];
const pct = (x: number | undefined) => (x === undefined ? "—" : `${(100 * x).toFixed(1)} %`);
console.log(
  `\nidle stablegate serve (sandbox simulators), ${SECONDS} s after a ${SETTLE_SECONDS} s start-up`,
);
console.log("run                | serve CPU (one core) | PostgreSQL CPU (every process) | transactions/s");
for (const r of readings) {
  console.log(
    `${r.label.padEnd(18)} | ${pct(r.cpuShare).padStart(20)} | ${pct(r.postgresShare).padStart(29)} | ${r.transactionsPerSecond === undefined ? "—" : r.transactionsPerSecond.toFixed(1)}`,
  );
}
