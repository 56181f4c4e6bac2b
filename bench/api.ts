/**
 * `npm run bench:api` — the cost of rate limiting on an authenticated GET.
 *
 * Starts `stablegate serve` as a child process on real PostgreSQL with the Redis rate-limit store,
 * creates a merchant, drives `GET /api/v1/public/account` (apikey + x-api-secret) with autocannon,
 * then does the same with rate limiting off, and prints req/s, p50 and p99 latency and the ratio.
 * The Standard tier limit is raised so the limiter does its full work (Lua script, sorted set)
 * without ever answering 429.
 *
 * Settings: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres; a
 * `stablegate_bench` database is recreated there), BENCH_REDIS_URL (redis://127.0.0.1:6379),
 * BENCH_SECONDS (10), BENCH_CONNECTIONS (50).
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import autocannon from "autocannon";
import { freePort, MAIN, ROOT, recreateDatabase, startServe, stopChild, TSX } from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

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

async function measure(label: string, port: number, headers: Record<string, string>) {
  const url = `http://127.0.0.1:${port}/api/v1/public/account`;
  // Warm-up: JIT, connection pools, prepared plans.
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 });
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
  const non2xx = r.non2xx;
  return {
    label,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.requests.total,
    non2xx,
  };
}

async function main() {
  const databaseUrl = await recreateDatabase(ADMIN_URL, "stablegate_bench");
  const port = await freePort();
  const sandboxPort = await freePort();
  const ports = { PORT: String(port), SANDBOX_PORT: String(sandboxPort) };
  execFileSync(TSX, [MAIN, "migrate"], { env: baseEnv(databaseUrl, ports), stdio: "inherit" });
  const created = JSON.parse(
    execFileSync(
      TSX,
      [MAIN, "merchant", "create", "--email", "bench@example.com", "--company", "Bench", "--json"],
      {
        env: baseEnv(databaseUrl, ports),
      },
    ).toString(),
  ) as { keys: { environment: string; apiKey: string; apiSecret: string }[] };
  const k = created.keys.find((x) => x.environment === "production");
  if (!k) throw new Error("no production key");
  const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };

  const results = [];
  for (const [label, extra] of [
    ["rate limiting on (Redis)", { RATE_LIMIT_STANDARD: "1000000000" }],
    ["rate limiting off", { RATE_LIMIT_ENABLED: "false" }],
  ] as const) {
    const child = await startServe(baseEnv(databaseUrl, { ...ports, ...extra }));
    try {
      results.push(await measure(label, port, headers));
    } finally {
      await stopChild(child);
    }
  }

  console.log(`\nGET /api/v1/public/account, ${CONNECTIONS} connections, ${SECONDS} s, PostgreSQL + Redis\n`);
  console.log("| run | req/s | p50 ms | p99 ms | requests | non-2xx |");
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const r of results) {
    console.log(`| ${r.label} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.total} | ${r.non2xx} |`);
  }
  const [on, off] = results as [(typeof results)[0], (typeof results)[0]];
  const cost = (1 - on.rps / off.rps) * 100;
  console.log(`\nlimiter cost: ${cost.toFixed(1)} % of throughput (goal: under 10 %)`);
  if (on.non2xx > 0 || off.non2xx > 0) console.log("warning: some responses were not 2xx");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
