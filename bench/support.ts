/** What the benches share: a recreated database, free ports, a `stablegate serve` child, percentiles. */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import pg from "pg";
import { type Database, openDatabase } from "../src/db/database.js";
import { migrate } from "../src/db/migrate.js";

export const ROOT = path.resolve(import.meta.dirname, "..");
export const TSX = path.join(ROOT, "node_modules", ".bin", "tsx");
export const MAIN = path.join(ROOT, "src", "main.ts");

/** Drops and creates database `name` on the server of `adminUrl`; returns its URL. */
export async function recreateDatabase(adminUrl: string, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  await c.query(`drop database if exists ${name} with (force)`);
  await c.query(`create database ${name}`);
  await c.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A migrated database: `name` recreated on the server of `adminUrl`, or in-memory PGlite without one. */
export async function freshDatabase(adminUrl: string | undefined, name: string): Promise<Database> {
  const db = adminUrl
    ? await openDatabase({ kind: "postgres", url: await recreateDatabase(adminUrl, name), poolSize: 5 })
    : await openDatabase({ kind: "pglite", dataDir: undefined });
  await migrate(db.db);
  return db;
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `stablegate serve` as a child process with `env`, once its `/healthz` on `env.PORT` answers. */
export async function startServe(env: Record<string, string>, tries = 200): Promise<ChildProcess> {
  // BENCH_CPU_PROF (a folder): the service writes a V8 CPU profile there when it stops.
  const prof = process.env.BENCH_CPU_PROF
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const child = spawn(process.execPath, [...prof, "--import", "tsx", MAIN, "serve"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${env.PORT}/healthz`;
  for (let i = 0; i < tries; i++) {
    try {
      if ((await fetch(url)).ok) return child;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error("server did not start");
}

/** SIGTERM, then the exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

/** The `p`-th percentile of ascending `sorted` values (nearest rank). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** CPU time (user + system) of a process so far, in µs; Linux /proc (clock ticks of 10 ms). */
export function cpuOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

/** CPU time so far (µs) of every live process whose command name is `comm` (e.g. `postgres`), by pid. */
export function cpuByCommand(comm: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) === comm)
        out.set(Number(entry), cpuOf(Number(entry)));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** CPU used (µs) between two `cpuByCommand` readings, by processes alive at the second. */
export function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let used = 0;
  for (const [pid, t] of after) used += t - (before.get(pid) ?? 0);
  return used;
}

// ---------------------------------------------------------------------------------------------
// Comparing two things: alternate them, report every round, the median and the spread.
//
// A bench that measures A once and then B once puts the host's drift (another process, CPU
// frequency, a warming cache) into the ratio. `alternate` measures A B B A A B … (`rounds` of each);
// each round's A and B ran next to each other, so each round gives one ratio, and the median of
// those ratios with their spread is the result. A drift then shows as a wide spread instead of
// passing for a result.
// ---------------------------------------------------------------------------------------------

/** BENCH_ROUNDS (default 3): rounds of each side in a comparison; fewer than 3 is warned about. */
export function benchRounds(fallback = 3): number {
  const rounds = Number(process.env.BENCH_ROUNDS ?? fallback);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`BENCH_ROUNDS must be an integer ≥ 1`);
  if (rounds < 3)
    console.warn(`BENCH_ROUNDS=${rounds}: fewer than 3 rounds per side is a smoke test, not a result`);
  return rounds;
}

/** One round of a comparison: what `measure` returned for each side, measured back to back. */
export interface Round<T> {
  round: number;
  a: T;
  b: T;
}

/**
 * Runs `measure` `rounds` times each side, strictly alternating, and returns the rounds in order.
 * The order within a round swaps every round (A B, B A, A B, …): a host that drifts steadily —
 * warming up, or slowing down — then favours neither side, where A always first would hand every
 * round's drift to the same side (seen in `bench:api`: the first-measured side read slower in the
 * early rounds of every run). `variants` are passed to `measure` as they are (a label, a port, a
 * configuration…); `onRound` sees each round as soon as it is done (to print it).
 */
export async function alternate<V, T>(
  rounds: number,
  variants: { a: V; b: V },
  measure: (variant: V, side: "a" | "b", round: number) => Promise<T>,
  onRound?: (round: Round<T>) => void,
): Promise<Round<T>[]> {
  const out: Round<T>[] = [];
  for (let round = 1; round <= rounds; round++) {
    let a: T;
    let b: T;
    if (round % 2 === 1) {
      a = await measure(variants.a, "a", round);
      b = await measure(variants.b, "b", round);
    } else {
      b = await measure(variants.b, "b", round);
      a = await measure(variants.a, "a", round);
    }
    const r = { round, a, b };
    out.push(r);
    onRound?.(r);
  }
  return out;
}

/** Median, min–max and interquartile range of a sample (quartiles linearly interpolated). */
export interface Spread {
  n: number;
  median: number;
  min: number;
  max: number;
  q1: number;
  q3: number;
}

export function ratioStats(values: readonly number[]): Spread {
  if (values.length === 0) throw new Error("ratioStats of no values");
  const s = [...values].sort((x, y) => x - y);
  const q = (p: number) => {
    const pos = (s.length - 1) * p;
    const lo = Math.floor(pos);
    const hi = Math.ceil(pos);
    return (s[lo] as number) + ((s[hi] as number) - (s[lo] as number)) * (pos - lo);
  };
  return {
    n: s.length,
    median: q(0.5),
    min: s[0] as number,
    max: s.at(-1) as number,
    q1: q(0.25),
    q3: q(0.75),
  };
}

/** "median 7.1 (min 5.0, max 9.3; IQR 6.0 to 8.2; n = 3)", each number through `format`. */
export function formatSpread(s: Spread, format: (x: number) => string = (x) => x.toFixed(2)): string {
  return `median ${format(s.median)} (min ${format(s.min)}, max ${format(s.max)}; IQR ${format(s.q1)} to ${format(s.q3)}; n = ${s.n})`;
}

/**
 * Prints a markdown table of every round (A's and B's figure and the round's ratio) and a summary
 * line with the median and spread of the ratio; returns the ratio's statistics.
 * `ratio(a, b)` is the compared quantity of one round (e.g. `b / a`, or `1 − a / b` for a cost).
 */
export function reportRounds<T>(options: {
  title: string;
  /** Column headers of the two sides' figure, e.g. "limiter on req/s". */
  a: string;
  b: string;
  ratioName: string;
  rounds: readonly Round<T>[];
  value: (t: T) => number;
  ratio: (a: number, b: number) => number;
  format?: (x: number) => string;
  formatRatio?: (x: number) => string;
}): Spread {
  const f = options.format ?? ((x: number) => x.toFixed(0));
  const fr = options.formatRatio ?? ((x: number) => x.toFixed(3));
  const ratios = options.rounds.map((r) => options.ratio(options.value(r.a), options.value(r.b)));
  console.log(`\n${options.title}\n`);
  console.log(`| round | ${options.a} | ${options.b} | ${options.ratioName} |`);
  console.log("|---:|---:|---:|---:|");
  options.rounds.forEach((r, i) => {
    console.log(
      `| ${r.round} | ${f(options.value(r.a))} | ${f(options.value(r.b))} | ${fr(ratios[i] as number)} |`,
    );
  });
  const stats = ratioStats(ratios);
  console.log(`\n${options.ratioName}: ${formatSpread(stats, fr)}`);
  return stats;
}
