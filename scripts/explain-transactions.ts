/**
 * Checks the query plans of the transaction list at scale (issue: "indexes that keep these queries
 * fast at 10 million rows"). Recreates `stablegate_explain`, migrates it, bulk-loads ROWS
 * transactions (default 10,000,000) over 1,000 merchants with one "whale" merchant holding 10 %,
 * analyzes, then prints EXPLAIN (ANALYZE, BUFFERS) of the queries the API runs.
 *
 *   npx tsx scripts/explain-transactions.ts        (EXPLAIN_DATABASE_URL, ROWS to change)
 */
import { sql } from "kysely";
import pg from "pg";
import { openDatabase } from "../src/db/database.js";
import { migrate } from "../src/db/migrate.js";
import { listParams } from "../src/domain/list.js";
import { listTransactions, transactionListQueries } from "../src/transactions/index.js";

const ADMIN_URL = process.env.EXPLAIN_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const ROWS = Number(process.env.ROWS ?? 10_000_000);

async function main() {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query("drop database if exists stablegate_explain with (force)");
  await admin.query("create database stablegate_explain");
  await admin.end();
  const u = new URL(ADMIN_URL);
  u.pathname = "/stablegate_explain";
  const database = await openDatabase({ kind: "postgres", url: u.toString(), poolSize: 2 });
  const db = database.db;
  await migrate(db);
  const t0 = performance.now();
  const log = (m: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0)} s] ${m}`);

  await sql`insert into merchants (id, email, company_name)
    select 'mer_' || g, 'm' || g || '@example.com', 'M' || g from generate_series(0, 999) g`.execute(db);
  // Load without the secondary indexes, then build them (as an operator would for a bulk import).
  const indexes = await sql<{ indexname: string; indexdef: string }>`
    select indexname, indexdef from pg_indexes where tablename = 'transactions' and indexname <> 'transactions_pkey'`.execute(
    db,
  );
  for (const i of indexes.rows) await sql.raw(`drop index ${i.indexname}`).execute(db);
  log(`loading ${ROWS} rows`);
  await sql`set synchronous_commit = off`.execute(db);
  const batch = 1_000_000;
  for (let start = 0; start < ROWS; start += batch) {
    const end = Math.min(ROWS, start + batch) - 1;
    await sql`
      insert into transactions (id, merchant_id, environment, type, status, currency_type, amount, fee, net_amount,
                                wallet_address, blockchain_tx_hash, order_id, reference, created_at, updated_at, confirmed_at)
      select 'tx_' || md5(g::text),
             case when g % 10 = 1 then 'mer_0' else 'mer_' || (g % 999 + 1) end,
             case when g % 5 = 0 then 'production' else 'sandbox' end,
             (array['deposit','deposit','withdrawal','payout'])[g % 4 + 1],
             (array['confirmed','completed','failed','pending','rejected'])[g % 5 + 1],
             (array['USDT-TRC20','USDT-ERC20'])[g % 2 + 1],
             (g % 100000 + 1) * 10000, 0, (g % 100000 + 1) * 10000,
             'T' || substr(md5('a' || g), 1, 33),
             '0x' || md5('h' || g) || md5('i' || g),
             'order-' || g,
             case when g % 3 = 0 then 'ref ' || g else null end,
             timestamptz '2025-01-01' + (g || ' seconds')::interval,
             timestamptz '2025-01-01' + (g || ' seconds')::interval,
             case when g % 5 < 2 then timestamptz '2025-01-01' + (g || ' seconds')::interval end
      from generate_series(${start}::bigint, ${end}::bigint) g`.execute(db);
    log(`  ${end + 1} rows`);
  }
  for (const i of indexes.rows) {
    await sql.raw(i.indexdef).execute(db);
    log(`built ${i.indexname}`);
  }
  await sql`analyze transactions`.execute(db);
  log("analyzed");

  const whale = { merchantId: "mer_0", environment: "sandbox" as const };
  const small = { merchantId: "mer_42", environment: "sandbox" as const };
  const cases: [
    string,
    typeof whale,
    Parameters<typeof listTransactions>[2],
    Parameters<typeof listParams>[0],
  ][] = [
    ["whale: first page, newest first", whale, {}, {}],
    ["whale: page 50 sorted by amount asc", whale, {}, { page: 50, sortBy: "amount", order: "asc" }],
    ["whale: status=pending, newest first", whale, { status: "pending" }, {}],
    ["whale: type=withdrawal & status=failed", whale, { type: "withdrawal", status: "failed" }, {}],
    ["whale: search a tx hash fragment", whale, { search: "0x" + "abcdef" }, {}],
    ["whale: search an order id", whale, { search: "order-4242420" }, {}],
    ["whale: sorted by confirmedAt desc", whale, {}, { sortBy: "confirmedAt" }],
    ["small merchant: first page", small, {}, {}],
    ["small merchant: search literal %", small, { search: "%" }, {}],
  ];
  for (const [name, scope, filter, page] of cases) {
    const params = listParams(page);
    const started = performance.now();
    await listTransactions(db, scope, filter, params);
    console.log(`\n=== ${name} (page + count: ${(performance.now() - started).toFixed(1)} ms)`);
    const queries = transactionListQueries(db, scope, filter, params);
    for (const q of [queries.rows, queries.count]) {
      const compiled = q.compile();
      const plan = await sql<{ "QUERY PLAN": string }>`explain (analyze, buffers, costs off) ${sql.raw(
        compiled.sql.replace(/\$(\d+)/g, (_m, i) => literal(compiled.parameters[Number(i) - 1])),
      )}`.execute(db);
      console.log(plan.rows.map((r) => `   ${r["QUERY PLAN"]}`).join("\n"));
    }
  }
  await database.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/** Inlines a parameter as an SQL literal (EXPLAIN of a parameterised query; script-only, trusted values). */
function literal(v: unknown): string {
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  if (v instanceof Date) return `'${v.toISOString()}'`;
  return `'${String(v).replace(/'/g, "''")}'`;
}
