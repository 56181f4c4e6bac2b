/**
 * `npm run bench:api` — the cost of rate limiting on an authenticated GET.
 *
 * Starts two `stablegate serve` children on real PostgreSQL (one database): "on" with the Redis
 * rate-limit store and the Standard tier limit raised so the limiter does its full work (Lua
 * script, sorted set) without ever answering 429, and "off" with rate limiting disabled. It drives
 * `GET /api/v1/public/account` (apikey + x-api-secret) with autocannon at each in turn, on off off
 * on … (`alternate` in support.ts, BENCH_ROUNDS rounds), and prints every run (req/s, p50/p99,
 * CPU per request of the service, Redis, PostgreSQL and the load generator, Redis script calls
 * per request), the limiter cost of each round (1 − on/off) and its median and spread, and the
 * same for CPU per request (the service's own, and all processes': on a CPU-bound 2-core machine
 * throughput follows the latter).
 *
 * Both services are started once and stay up for the whole bench, the idle one beside the loaded
 * one, so process start-up, JIT warm-up and pool filling are not in any round. The idle service
 * costs little (its worker's idle polls, ~3 % of one core: `bench:idle`) and is symmetric: while
 * "on" is loaded "off" idles and the other way round, so it cancels in the ratio. Starting and
 * stopping a service per round would instead put a cold process in every round.
 *
 * Settings: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres; a
 * `stablegate_bench` database is recreated there), BENCH_REDIS_URL (redis://127.0.0.1:6379),
 * BENCH_SECONDS (10 per run), BENCH_CONNECTIONS (50), BENCH_ROUNDS (3 per side), BENCH_WARMUP (5 s,
 * twice per service, before the rounds), BENCH_STORE
 * (`memory`: the "on" service limits in memory, to see the limiter's cost without Redis).
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import path from "node:path";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import {
  alternate,
  benchRounds,
  cpuBetween,
  cpuByCommand,
  cpuOf,
  freePort,
  MAIN,
  ROOT,
  recreateDatabase,
  reportRounds,
  startServe,
  stopChild,
  TSX,
} from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = benchRounds();
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
/** BENCH_STORE=memory: the "on" service limits in memory (no Redis): the limiter's cost without its store. */
const MEMORY_STORE = process.env.BENCH_STORE === "memory";

function baseEnv(databaseUrl: string, extra: Record<string, string>) {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
    LOG_LEVEL: "warn",
    DATA_DIR: path.join(ROOT, "data", "bench"),
    ...extra,
  };
}

interface Service {
  label: string;
  port: number;
  child: ChildProcess;
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  /** CPU µs per request of the service process and of Redis (every redis-server process). */
  serveUs: number;
  redisUs: number;
  /** CPU µs per request of this process (autocannon) and of PostgreSQL (all its processes). */
  loadUs: number;
  postgresUs: number;
  /** Script calls (EVALSHA + EVAL, every client of the Redis) per request: < 1 when hits share calls. */
  redisCalls: number;
}

const redisStats = new Redis(REDIS_URL, { lazyConnect: true });

/** Script calls Redis has run so far (INFO commandstats). */
async function scriptCalls(): Promise<number> {
  const info = await redisStats.info("commandstats");
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1]);
  return calls;
}

/** CPU per request of every process involved: on a CPU-bound machine, what throughput follows. */
const allUs = (r: Run) => r.serveUs + r.redisUs + r.postgresUs + r.loadUs;

/** `seconds` of load on `port`; the service's CPU per request is filled in by the caller. */
async function load(port: number, headers: Record<string, string>, seconds: number): Promise<Run> {
  const url = `http://127.0.0.1:${port}/api/v1/public/account`;
  const callsBefore = await scriptCalls();
  const redisBefore = cpuByCommand("redis-server");
  const postgresBefore = cpuByCommand("postgres");
  const selfBefore = process.cpuUsage();
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: seconds });
  const self = process.cpuUsage(selfBefore);
  const redisUs = cpuBetween(redisBefore, cpuByCommand("redis-server"));
  const postgresUs = cpuBetween(postgresBefore, cpuByCommand("postgres"));
  const calls = (await scriptCalls()) - callsBefore;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.requests.total,
    non2xx: r.non2xx,
    serveUs: 0,
    redisUs: redisUs / Math.max(1, r.requests.total),
    loadUs: (self.user + self.system) / Math.max(1, r.requests.total),
    postgresUs: postgresUs / Math.max(1, r.requests.total),
    redisCalls: calls / Math.max(1, r.requests.total),
  };
}

async function main() {
  const databaseUrl = await recreateDatabase(ADMIN_URL, "stablegate_bench");
  const setupEnv = baseEnv(databaseUrl, {
    PORT: String(await freePort()),
    SANDBOX_PORT: String(await freePort()),
  });
  execFileSync(TSX, [MAIN, "migrate"], { env: setupEnv, stdio: "inherit" });
  const created = JSON.parse(
    execFileSync(
      TSX,
      [MAIN, "merchant", "create", "--email", "bench@example.com", "--company", "Bench", "--json"],
      { env: setupEnv },
    ).toString(),
  ) as { keys: { environment: string; apiKey: string; apiSecret: string }[] };
  const k = created.keys.find((x) => x.environment === "production");
  if (!k) throw new Error("no production key");
  const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };

  const services: Service[] = [];
  try {
    const configurations: [string, Record<string, string>][] = [
      MEMORY_STORE
        ? // An empty REDIS_URL is no Redis: the memory store.
          ["limiter on (memory)", { RATE_LIMIT_STANDARD: "1000000000", REDIS_URL: "" }]
        : ["limiter on (Redis)", { RATE_LIMIT_STANDARD: "1000000000" }],
      ["limiter off", { RATE_LIMIT_ENABLED: "false" }],
    ];
    for (const [label, extra] of configurations) {
      const port = await freePort();
      const env = baseEnv(databaseUrl, {
        PORT: String(port),
        SANDBOX_PORT: String(await freePort()),
        ...extra,
      });
      services.push({ label, port, child: await startServe(env) });
    }
    const [on, off] = services as [Service, Service];

    // Warm-up of each (JIT, connection pools, prepared plans, the database's caches), not
    // reported: two turns of BENCH_WARMUP seconds each, alternating. With 2 s once, both services
    // still ran 15–40 % slower in the first two rounds than in the later ones, in every run.
    for (let turn = 0; turn < 2; turn++) for (const s of services) await load(s.port, headers, WARMUP);

    console.log(
      `\nGET /api/v1/public/account, ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds, PostgreSQL + Redis\n`,
    );
    console.log(
      "| round | service | req/s | p50 ms | p99 ms | requests | non-2xx | CPU µs/req: serve | Redis | PostgreSQL | load generator | all | Redis script calls/req |",
    );
    console.log("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    const rounds = await alternate(ROUNDS, { a: on, b: off }, async (s, _side, round) => {
      const cpuBefore = cpuOf(s.child.pid);
      const run = await load(s.port, headers, SECONDS);
      run.serveUs = (cpuOf(s.child.pid) - cpuBefore) / Math.max(1, run.total);
      console.log(
        `| ${round} | ${s.label} | ${run.rps.toFixed(0)} | ${run.p50} | ${run.p99} | ${run.total} | ${run.non2xx} | ${run.serveUs.toFixed(0)} | ${run.redisUs.toFixed(1)} | ${run.postgresUs.toFixed(0)} | ${run.loadUs.toFixed(0)} | ${allUs(run).toFixed(0)} | ${run.redisCalls.toFixed(2)} |`,
      );
      return run;
    });

    const cost = reportRounds({
      title: "limiter cost per round (each round: on and off back to back, the order swapped every round)",
      a: "on req/s",
      b: "off req/s",
      ratioName: "limiter cost % (1 − on/off)",
      rounds,
      value: (r) => r.rps,
      ratio: (a, b) => (1 - a / b) * 100,
      formatRatio: (x) => x.toFixed(1),
    });
    console.log(`goal: median under 10 % → ${cost.median < 10 ? "met" : "NOT met"}`);
    reportRounds({
      title: "serve CPU per request (the same runs)",
      a: "on µs/req",
      b: "off µs/req",
      ratioName: "serve CPU added by the limiter, µs/req (on − off)",
      rounds,
      value: (r) => r.serveUs,
      ratio: (a, b) => a - b,
      formatRatio: (x) => x.toFixed(1),
    });
    reportRounds({
      title: "CPU per request of every process (serve, Redis, PostgreSQL, load generator; the same runs)",
      a: "on µs/req",
      b: "off µs/req",
      ratioName: "CPU added by the limiter, % of off's (on / off − 1)",
      rounds,
      value: allUs,
      ratio: (a, b) => (a / b - 1) * 100,
      formatRatio: (x) => x.toFixed(1),
    });
    if (rounds.some((r) => r.a.non2xx > 0 || r.b.non2xx > 0))
      console.log("warning: some responses were not 2xx");
  } finally {
    for (const s of services) await stopChild(s.child);
    redisStats.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
