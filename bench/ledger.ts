import { openDatabase } from "../src/db/database.js";
import { migrate } from "../src/db/migrate.js";
import { newId } from "../src/domain/ids.js";
import { UNIT } from "../src/domain/money.js";
import { creditDeposit } from "../src/ledger/operations.js";
import { verifyLedger } from "../src/ledger/verify.js";
import { createMerchantWithKeys } from "../src/services/merchants.js";
import { recreateDatabase } from "./support.js";

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

async function main() {
  const url = await recreateDatabase(ADMIN_URL, "stablegate_bench_ledger");
  const database = await openDatabase({ kind: "postgres", url, poolSize: CONNECTIONS });
  const db = database.db;
  await migrate(db);
  const merchants: string[] = [];
  for (let i = 0; i < 1000; i++) {
    merchants.push(
      (await createMerchantWithKeys(db, { email: `bench${i}@example.com`, companyName: `Bench ${i}` })).id,
    );
  }

  async function run(label: string, pick: () => string) {
    let done = 0;
    const latencies: number[] = [];
    const deadline = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline) {
          const merchantId = pick();
          const started = performance.now();
          await db.transaction().execute((trx) =>
            creditDeposit(
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
    latencies.sort((a, b) => a - b);
    const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
    return { label, perSecond: done / SECONDS, p50: q(0.5), p99: q(0.99), done };
  }

  const hot = merchants[0] as string;
  const contention = await run("one merchant account (contention)", () => hot);
  const spread = await run(
    "1,000 merchants (spread)",
    () => merchants[Math.floor(Math.random() * merchants.length)] as string,
  );

  console.log(`\nledger postings, PostgreSQL, ${CONNECTIONS} concurrent transactions, ${SECONDS} s each\n`);
  console.log("| workload | postings/s | p50 ms | p99 ms | postings |");
  console.log("|---|---:|---:|---:|---:|");
  for (const r of [contention, spread]) {
    console.log(
      `| ${r.label} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.done} |`,
    );
  }
  console.log(`\nspread / contention: ${(spread.perSecond / contention.perSecond).toFixed(2)}x`);
  const report = await verifyLedger(db);
  console.log(
    `ledger verify: ${report.ok ? "OK" : "MISMATCH"} (${report.postings} postings, ${report.entries} entries)`,
  );
  await database.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
