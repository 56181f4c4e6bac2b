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
