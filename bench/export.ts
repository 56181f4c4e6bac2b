/**
 * `npm run bench:export` — the accounting export (issue #21) at scale: the memory of the `serve`
 * process while it streams every transaction of one merchant as CSV.
 *
 * On real PostgreSQL: a `stablegate_bench_export` database is recreated, one merchant gets
 * BENCH_ROWS transactions (default 1,000,000; generated in SQL, amounts and fees varied, some order
 * ids starting with `=`), then for each size of BENCH_SIZES (default "100000,<BENCH_ROWS>": the first
 * rows by time, through the `to` filter) one `serve` child exports them over HTTP with the API key
 * while this process reads the download as a slow-ish client would (it parses every line). The
 * service's resident memory (VmRSS, /proc) is sampled every 50 ms: before the export, its peak during
 * it, after it. Flat memory is the same peak for 10× the rows. Also checked: the row count, the CSV's
 * sum of netAmount against the database's (exact, bigint), no cell starting with `=`.
 *
 * Settings: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_ROWS,
 * BENCH_SIZES, BENCH_HEAP_MB (the service's V8 heap cap, `--max-old-space-size`).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { freePort, MAIN, ROOT, recreateDatabase, startServe, stopChild, TSX } from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const SIZES = (process.env.BENCH_SIZES ?? `100000,${ROWS}`).split(",").map(Number);
const UNIT = 1_000_000n;

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0);
}

function units(decimal: string): bigint {
  const [whole = "0", frac = ""] = decimal.split(".");
  return BigInt(whole) * UNIT + BigInt(frac.padEnd(6, "0"));
}

async function main() {
  const databaseUrl = await recreateDatabase(ADMIN_URL, "stablegate_bench_export");
  const port = await freePort();
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "warn",
    DATA_DIR: path.join(ROOT, "data", "bench-export"),
    PORT: String(port),
    SANDBOX_PORT: String(await freePort()),
    RATE_LIMIT_STANDARD: "1000000",
    // BENCH_HEAP_MB: cap the service's V8 heap. An export that held its rows would die of it; a
    // streamed one finishes. (Peak RSS alone mostly shows how lazily V8 collects garbage.)
    ...(process.env.BENCH_HEAP_MB
      ? { NODE_OPTIONS: `--max-old-space-size=${process.env.BENCH_HEAP_MB}` }
      : {}),
  };
  execFileSync(TSX, [MAIN, "migrate"], { env, stdio: "inherit" });
  const created = JSON.parse(
    execFileSync(
      TSX,
      [MAIN, "merchant", "create", "--email", "export@example.com", "--company", "Export", "--json"],
      {
        env,
      },
    ).toString(),
  ) as { id: string; keys: { environment: string; apiKey: string; apiSecret: string }[] };
  const key = created.keys.find((k) => k.environment === "production");
  if (!key) throw new Error("no production key");

  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const t0 = performance.now();
  for (let start = 1; start <= ROWS; start += 200_000) {
    const end = Math.min(ROWS, start + 199_999);
    await client.query(
      `insert into transactions (id, merchant_id, environment, type, status, currency_type, amount, fee,
         net_amount, order_id, reference, created_at, updated_at, confirmed_at)
       select 'tx_bench' || lpad(i::text, 8, '0'), $1, 'production', 'deposit', 'confirmed',
         case when i % 2 = 0 then 'USDT-TRC20' else 'USDT-ERC20' end,
         (i * 1000 + 1)::numeric, (i % 7)::numeric, (i * 1000 + 1 - i % 7)::numeric,
         case when i % 1000 = 0 then '=HYPERLINK("http://x","' || i || '")' else 'order-' || i end,
         case when i % 500 = 0 then 'a "quoted", multi' || chr(10) || 'line' else null end,
         timestamptz '2026-01-01' + i * interval '1 second', timestamptz '2026-01-01' + i * interval '1 second',
         timestamptz '2026-01-01' + i * interval '1 second'
       from generate_series($2::int, $3::int) as i`,
      [created.id, start, end],
    );
  }
  await client.query("vacuum analyze transactions");
  console.log(
    `${ROWS.toLocaleString("en")} transactions loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );

  const rows: string[] = [];
  for (const size of SIZES) {
    const to = new Date(Date.UTC(2026, 0, 1) + (size + 1) * 1000).toISOString();
    const expected = await client.query<{ n: string; s: string }>(
      `select count(*) as n, coalesce(sum(net_amount), 0)::text as s from transactions
       where merchant_id = $1 and environment = 'production' and created_at < $2`,
      [created.id, to],
    );
    const child = await startServe(env);
    const pid = child.pid as number;
    await new Promise((r) => setTimeout(r, 1_000));
    // Warm the route (JIT, pool) on a small export, then settle.
    await (
      await fetch(`http://127.0.0.1:${port}/api/v1/public/exports/transactions.csv?to=2026-01-01T00:01:00Z`, {
        headers: { apikey: key.apiKey, "x-api-secret": key.apiSecret },
      })
    ).text();
    global.gc?.();
    await new Promise((r) => setTimeout(r, 1_000));
    const before = rssKiB(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssKiB(pid));
    }, 50);
    const start = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/public/exports/transactions.csv?to=${to}`, {
      headers: { apikey: key.apiKey, "x-api-secret": key.apiSecret },
    });
    if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}`);
    let count = -1; // the header
    let sum = 0n;
    let formula = 0;
    let bytes = 0;
    let rest = "";
    let netColumn = -1;
    const decoder = new TextDecoder();
    // Records end with CRLF; a quoted LF inside a cell is a bare LF, so splitting on CRLF is exact here.
    for await (const chunk of res.body) {
      bytes += chunk.byteLength;
      const parts = (rest + decoder.decode(chunk, { stream: true })).split("\r\n");
      rest = parts.pop() ?? "";
      for (const line of parts) {
        if (count === -1) netColumn = line.split(",").indexOf("netAmount");
        else {
          sum += units(line.split(",")[netColumn] ?? "0");
          if (line.includes(",=")) formula++;
        }
        count++;
      }
    }
    const seconds = (performance.now() - start) / 1000;
    clearInterval(sampler);
    await new Promise((r) => setTimeout(r, 500));
    const after = rssKiB(pid);
    await stopChild(child);
    const ok = String(count) === expected.rows[0]?.n && String(sum) === expected.rows[0]?.s && formula === 0;
    rows.push(
      `| ${size.toLocaleString("en")} | ${(bytes / 2 ** 20).toFixed(0)} MiB | ${seconds.toFixed(1)} s | ` +
        `${Math.round(count / seconds).toLocaleString("en")} | ${(before / 1024).toFixed(0)} | ` +
        `${(peak / 1024).toFixed(0)} | ${(after / 1024).toFixed(0)} | ${ok ? "yes" : `NO (rows ${count}, sum ${sum}, formula cells ${formula})`} |`,
    );
    if (!ok) process.exitCode = 1;
  }
  await client.end();
  console.log(
    "\n| rows | CSV | time | rows/s | RSS before (MiB) | RSS peak | RSS after | count, netAmount sum, no `=` cell |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|---|");
  for (const r of rows) console.log(r);
}

await main();
