/**
 * `npm run bench:checkout` — checkout session creation throughput, and confirmation latency with
 * 100,000 open sessions.
 *
 * On real PostgreSQL + Redis, `stablegate serve` as a child process (sandbox simulator chains):
 * 1. Ceiling: a bare `pg` loop in this process sending, per session, the service's own statements
 *    (API-key lookup and the one-statement insert of watched address, deposit transaction and
 *    session row, both named prepared statements; indexes reserved 32 per round trip), one session
 *    per statement as pgbench would, at the same concurrency; and, for reference, the same rows as
 *    a naive transaction of four statements. Then `POST /checkout/session` with autocannon (the
 *    service coalesces concurrent requests' lookups and inserts into shared statements: deposits
 *    decision 10d). The ceiling and the API alternate, ceiling then API, BENCH_ROUNDS times
 *    (default 3; `alternate` in support.ts; the service is started once and idles through the
 *    ceiling runs); prints every run's req/s, p50/p99 and CPU per session of every process, and
 *    per round the ratio API / ceiling with its median and spread. The naive transaction is run
 *    once, before the rounds, as a reference. Goal: ≥ 1,500 req/s and ≥ 40 % of the ceiling.
 * 2. 100,000 open sessions are bulk-inserted (watched addresses included); then sessions are paid
 *    one at a time through the sandbox pay endpoint, and the time from the confirming block (the
 *    pay call's answer: the simulator mines it at once, 1 confirmation) to the webhook's arrival at
 *    a local receiver is measured. Goal: p50 ≤ 200 ms.
 *
 * BENCH_CPU_PROF (a folder): `serve` writes a V8 CPU profile there.
 *
 * Settings: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres; a
 * `stablegate_bench_checkout` database is recreated there), BENCH_REDIS_URL, BENCH_SECONDS (10),
 * BENCH_CONNECTIONS (32), BENCH_POOL (database connections of the service and of the ceiling loop;
 * default 10, the service's own DATABASE_POOL_SIZE default), BENCH_OPEN_SESSIONS (100000),
 * BENCH_PAYMENTS (100).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import pg from "pg";
import {
  alternate,
  benchRounds,
  cpuBetween,
  cpuByCommand,
  cpuOf,
  freePort,
  MAIN,
  percentile,
  ROOT,
  type Round,
  recreateDatabase,
  reportRounds,
  startServe,
  stopChild,
  TSX,
} from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** Database connections of the service and of the ceiling loop (default: the service's DATABASE_POOL_SIZE default). */
const POOL = Number(process.env.BENCH_POOL ?? 10);
const OPEN_SESSIONS = Number(process.env.BENCH_OPEN_SESSIONS ?? 100_000);
const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 100);
const DB_NAME = "stablegate_bench_checkout";
const ROUNDS = benchRounds();

function env(databaseUrl: string, extra: Record<string, string>) {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
    LOG_LEVEL: "warn",
    DATA_DIR: path.join(ROOT, "data", "bench-checkout"),
    RATE_LIMIT_STANDARD: "1000000000",
    SSRF_ALLOW_CIDRS: "127.0.0.0/8",
    DATABASE_POOL_SIZE: String(POOL),
    ...extra,
  };
}

/**
 * One session's rows from a bare driver loop, two ways:
 * - `statements`: what the service sends for one session — the API-key lookup, then the
 *   watched address, the deposit transaction and the session row in ONE statement (data-modifying
 *   CTEs, no explicit transaction), both as named prepared statements, with indexes reserved 32 per
 *   sequence round trip. The ratio is taken to this.
 * - `transaction`: the same rows as four statements in one transaction (begin, nextval, three
 *   inserts, commit), the naive way, for reference.
 */
async function bareCeiling(
  databaseUrl: string,
  merchantId: string,
  apiKey: string,
  how: "statements" | "transaction",
) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: POOL });
  const latencies: number[] = [];
  let done = 0;
  const reserve: number[] = [];
  const nextIndex = async (c: pg.PoolClient) => {
    const ready = reserve.shift();
    if (ready !== undefined) return ready;
    const r = await c.query(
      "select nextval('deposit_index_usdt_erc20_sandbox')::int as index from generate_series(1, 32)",
    );
    reserve.push(...r.rows.slice(1).map((x: { index: number }) => x.index));
    return r.rows[0].index as number;
  };
  const end = performance.now() + SECONDS * 1000;
  const worker = async () => {
    const c = await pool.connect();
    try {
      while (performance.now() < end) {
        const t0 = performance.now();
        const id = `tx_bare${randomBytes(12).toString("hex")}`;
        if (how === "statements") {
          await c.query({
            name: "auth",
            text: `select k.id, k.merchant_id, k.environment, k.secret_hash, k.status, k.revoked_reason, m.status as merchant_status, s.ip_allowlist
             from api_keys k join merchants m on m.id = k.merchant_id
             left join merchant_settings s on s.merchant_id = k.merchant_id and s.environment = k.environment
             where k.api_key = $1`,
            values: [apiKey],
          });
          const index = await nextIndex(c);
          const address = `0xbare${index}`;
          await c.query({
            name: "create",
            text: `with w as (insert into watched_addresses (network, environment, address, derivation_index, merchant_id, purpose, reference_id, watch_until)
                        values ('USDT-ERC20', 'sandbox', $1, $2, $3, 'checkout', $4, now() + interval '7 days')),
                  s as (insert into checkout_sessions (id, merchant_id, environment, network, address, expires_at, callback_url)
                        values ($4, $3, 'sandbox', 'USDT-ERC20', $1, now() + interval '30 minutes', null))
             insert into transactions (id, merchant_id, environment, type, status, currency_type, amount, fee, net_amount, wallet_address)
             values ($4, $3, 'sandbox', 'deposit', 'pending', 'USDT-ERC20', 10000000, 0, 10000000, $1)
             returning id, merchant_id, environment, type, status, currency_type, amount, fee, net_amount, actual_balance,
               wallet_address, blockchain_tx_hash, order_id, reference, external_user_id, checkout_session_id,
               rejection_reason, created_at, updated_at, confirmed_at`,
            values: [address, index, merchantId, id],
          });
        } else {
          await c.query("begin");
          const idx = await c.query("select nextval('deposit_index_usdt_erc20_sandbox') as index");
          const address = `0xbare${idx.rows[0].index}`;
          await c.query(
            `insert into watched_addresses (network, environment, address, derivation_index, merchant_id, purpose, reference_id, watch_until)
             values ('USDT-ERC20', 'sandbox', $1, $2, $3, 'checkout', $4, now() + interval '7 days')`,
            [address, idx.rows[0].index, merchantId, id],
          );
          await c.query(
            `insert into transactions (id, merchant_id, environment, type, status, currency_type, amount, fee, net_amount, wallet_address)
             values ($1, $2, 'sandbox', 'deposit', 'pending', 'USDT-ERC20', 10000000, 0, 10000000, $3)`,
            [id, merchantId, address],
          );
          await c.query(
            `insert into checkout_sessions (id, merchant_id, environment, network, address, expires_at)
             values ($1, $2, 'sandbox', 'USDT-ERC20', $3, now() + interval '30 minutes')`,
            [id, merchantId, address],
          );
          await c.query("commit");
        }
        latencies.push(performance.now() - t0);
        done++;
      }
    } finally {
      c.release();
    }
  };
  const t0 = performance.now();
  const cpu0 = { self: process.cpuUsage(), postgres: cpuByCommand("postgres") };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(cpu0.self);
  const cpu = {
    client: (self.user + self.system) / done,
    postgres: cpuBetween(cpu0.postgres, cpuByCommand("postgres")) / done,
  };
  await pool.end();
  latencies.sort((a, b) => a - b);
  return { rps: done / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), cpu };
}

async function bulkOpenSessions(databaseUrl: string, merchantId: string, n: number) {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  await c.query("begin");
  await c.query(
    `insert into transactions (id, merchant_id, environment, type, status, currency_type, amount, fee, net_amount, wallet_address)
     select 'tx_bulk' || i, $1, 'sandbox', 'deposit', 'pending', 'USDT-TRC20', 10000000, 0, 10000000, 'Tbulk' || i
     from generate_series(1, $2::int) i`,
    [merchantId, n],
  );
  await c.query(
    `insert into checkout_sessions (id, merchant_id, environment, network, address, expires_at)
     select 'tx_bulk' || i, $1, 'sandbox', 'USDT-TRC20', 'Tbulk' || i, now() + interval '1 day'
     from generate_series(1, $2::int) i`,
    [merchantId, n],
  );
  await c.query(
    `insert into watched_addresses (network, environment, address, derivation_index, merchant_id, purpose, reference_id, watch_until)
     select 'USDT-TRC20', 'sandbox', 'Tbulk' || i, 10000000 + i, $1, 'checkout', 'tx_bulk' || i, now() + interval '8 days'
     from generate_series(1, $2::int) i`,
    [merchantId, n],
  );
  await c.query("commit");
  await c.query("analyze");
  const open = await c.query("select count(*)::int as n from checkout_sessions where closed_at is null");
  await c.end();
  return open.rows[0].n as number;
}

async function main() {
  const databaseUrl = await recreateDatabase(ADMIN_URL, DB_NAME);
  const ports = { PORT: String(await freePort()), SANDBOX_PORT: String(await freePort()) };
  execFileSync(TSX, [MAIN, "migrate"], { env: env(databaseUrl, ports), stdio: "inherit" });
  const created = JSON.parse(
    execFileSync(
      TSX,
      [MAIN, "merchant", "create", "--email", "bench@example.com", "--company", "Bench", "--json"],
      {
        env: env(databaseUrl, ports),
      },
    ).toString(),
  ) as { id: string; keys: { environment: string; apiKey: string; apiSecret: string }[] };
  const k = created.keys.find((x) => x.environment === "sandbox");
  if (!k) throw new Error("no sandbox key");
  const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret, "content-type": "application/json" };

  // ── 1. creation throughput vs the bare ceiling ──
  // Each phase starts from a vacuumed, analysed database: the autovacuum work the previous phase's
  // inserts leave behind (the trigram index's pending list above all) is not charged to the next.
  const settle = async () => {
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    await c.query("vacuum (analyze) transactions, checkout_sessions, watched_addresses");
    await c.end();
  };
  await settle();
  const naive = await bareCeiling(databaseUrl, created.id, k.apiKey, "transaction");
  await settle();
  const server = await startServe(env(databaseUrl, ports), 300);
  const sandbox = `http://127.0.0.1:${ports.SANDBOX_PORT}`;
  type Run = {
    rps: number;
    p50: number;
    p99: number;
    non2xx: number;
    cpu: { client: number; serve: number; postgres: number; redis: number };
  };
  const options = {
    url: `${sandbox}/checkout/session`,
    method: "POST" as const,
    headers,
    body: JSON.stringify({ amount: 10, currencyType: "USDT-ERC20" }),
    connections: CONNECTIONS,
  };
  const apiRun = async (): Promise<Run> => {
    const cpu0 = {
      self: process.cpuUsage(),
      serve: cpuOf(server.pid),
      postgres: cpuByCommand("postgres"),
      redis: cpuByCommand("redis-server"),
    };
    const r = await autocannon({ ...options, duration: SECONDS });
    const self = process.cpuUsage(cpu0.self);
    const n = r.requests.total;
    return {
      rps: r.requests.average,
      p50: r.latency.p50,
      p99: r.latency.p99,
      non2xx: r.non2xx,
      cpu: {
        client: (self.user + self.system) / n,
        serve: (cpuOf(server.pid) - cpu0.serve) / n,
        postgres: cpuBetween(cpu0.postgres, cpuByCommand("postgres")) / n,
        redis: cpuBetween(cpu0.redis, cpuByCommand("redis-server")) / n,
      },
    };
  };
  /** A bare loop's figures as a run (no service, no Redis: their CPU is 0 and not printed). */
  const asRun = (b: Awaited<ReturnType<typeof bareCeiling>>): Run => ({
    ...b,
    non2xx: 0,
    cpu: { client: b.cpu.client, serve: 0, postgres: b.cpu.postgres, redis: 0 },
  });
  const cpuText = (r: Run) =>
    r.cpu.serve === 0 && r.cpu.redis === 0
      ? `client ${r.cpu.client.toFixed(0)} + PostgreSQL ${r.cpu.postgres.toFixed(0)}`
      : `load generator ${r.cpu.client.toFixed(0)} + serve ${r.cpu.serve.toFixed(0)} + PostgreSQL ${r.cpu.postgres.toFixed(0)} + Redis ${r.cpu.redis.toFixed(0)}`;
  const row = (name: string, r: { rps: number; p50: number; p99: number }, cpu: string) =>
    console.log(`| ${name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${cpu} |`);
  let rounds: Round<Run>[];
  try {
    await autocannon({ ...options, duration: 2 }); // warm-up
    console.log(
      `\n## POST /checkout/session — ${CONNECTIONS} connections (database pool ${POOL}), ${SECONDS} s per run, ${ROUNDS} rounds, PostgreSQL + Redis\n`,
    );
    console.log("| round | run | req/s | p50 ms | p99 ms | CPU µs per session |");
    console.log("|---|---|---:|---:|---:|---|");
    console.log(
      `| – | bare pg loop, one transaction of 4 statements (reference) | ${naive.rps.toFixed(0)} | ${naive.p50.toFixed(1)} | ${naive.p99.toFixed(1)} | ${cpuText(asRun(naive))} |`,
    );
    rounds = await alternate(ROUNDS, { a: "ceiling", b: "api" } as const, async (which, _side, round) => {
      await settle();
      const r =
        which === "ceiling"
          ? asRun(await bareCeiling(databaseUrl, created.id, k.apiKey, "statements"))
          : await apiRun();
      row(
        `${round} | ${which === "ceiling" ? "bare pg loop, the service's statements (ceiling)" : "stablegate API"}`,
        r,
        cpuText(r),
      );
      return r;
    });
  } finally {
    await stopChild(server);
  }
  console.log("\n(CPU from Linux /proc, 10 ms ticks; PostgreSQL = all its processes.)");
  const ratio = reportRounds({
    title: "API / ceiling per round (ceiling, then API, back to back)",
    a: "ceiling req/s",
    b: "API req/s",
    ratioName: "API / ceiling %",
    rounds,
    value: (r) => r.rps,
    ratio: (a, b) => (100 * b) / a,
    formatRatio: (x) => x.toFixed(0),
  });
  const apiRps = [...rounds.map((r) => r.b.rps)].sort((x, y) => x - y);
  const non2xx = rounds.reduce((sum, r) => sum + r.b.non2xx, 0);
  console.log(
    `goals: API / ceiling ≥ 40 % (median ${ratio.median.toFixed(0)} %); API ≥ 1,500 req/s (median ${(apiRps[Math.floor((apiRps.length - 1) / 2)] ?? 0).toFixed(0)}, over the rounds: ${apiRps.map((x) => x.toFixed(0)).join(" / ")})` +
      (non2xx > 0 ? `; warning: ${non2xx} non-2xx answers` : ""),
  );

  // ── 2. block → webhook with many open sessions ──
  const open = await bulkOpenSessions(databaseUrl, created.id, OPEN_SESSIONS);
  const arrivals = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      if (!arrivals.has(body.data.transactionId)) arrivals.set(body.data.transactionId, performance.now());
      res.end("ok");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const server2 = await startServe(env(databaseUrl, ports), 300);
  const latencies: number[] = [];
  try {
    const set = await fetch(`${sandbox}/api/v1/webhook/url`, {
      method: "POST",
      headers,
      body: JSON.stringify({ webhookUrl: hookUrl }),
    });
    if (!set.ok) throw new Error(`webhook url: ${set.status} ${await set.text()}`);
    for (let i = 0; i < PAYMENTS; i++) {
      const s = await fetch(`${sandbox}/checkout/session`, {
        method: "POST",
        headers,
        body: JSON.stringify({ amount: 1, currencyType: "USDT-TRC20" }),
      });
      const id = ((await s.json()) as { data: { id: string } }).data.id;
      const pay = await fetch(`${sandbox}/api/v1/sandbox/checkout/${id}/pay`, {
        method: "POST",
        headers,
        body: "{}",
      });
      const mined = performance.now();
      if (pay.status !== 202) throw new Error(`pay: ${pay.status} ${await pay.text()}`);
      const deadline = mined + 10_000;
      while (!arrivals.has(id) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      const at = arrivals.get(id);
      if (at === undefined) throw new Error(`no webhook for ${id} within 10 s`);
      latencies.push(at - mined);
    }
  } finally {
    await stopChild(server2);
    receiver.close();
  }
  latencies.sort((a, b) => a - b);

  console.log(
    `\n## confirming block → webhook received, ${open} open sessions, ${PAYMENTS} payments one at a time\n`,
  );
  console.log(
    `p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms, max ${latencies.at(-1)?.toFixed(0)} ms (goal p50 ≤ 200 ms)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
