import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import { getBalances } from "../../src/ledger/balances.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { onPostgres, openTestDatabase } from "../support/db.js";
import { mainArgs } from "../support/processes.js";
import { fund, newMerchant } from "./support.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

let database: (Database & { url: string | undefined }) | undefined;
beforeAll(async () => {
  if (onPostgres) database = await openTestDatabase();
});
afterAll(() => database?.close());

// Needs a second process on the same database, so PostgreSQL only (PGlite is single-process).
it.skipIf(!onPostgres)(
  "a process killed inside a posting transaction leaves no partial posting",
  async () => {
    const db = database!.db;
    const m = await newMerchant(db);
    await fund(db, m, 10n);
    const before = await verifyLedger(db);
    const transactionId = newId("tx");

    // node itself (with the tsx loader), so the SIGKILL hits the process holding the transaction.
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "test/ledger/crash-child.ts"), database!.url!, m, transactionId],
      {
        cwd: ROOT,
      },
    );
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      child.on("exit", (_code, sig) => resolve(sig)),
    );
    expect(signal).toBe("SIGKILL");
    expect(out).toContain("balances-updated"); // it died mid-posting, after updating the balance

    const [b] = await getBalances(db, m, "sandbox");
    expect(b).toMatchObject({ available: 10n * UNIT, held: 0n });
    expect(
      await db
        .selectFrom("ledger_postings")
        .where("transaction_id", "=", transactionId)
        .selectAll()
        .execute(),
    ).toEqual([]);
    const after = await verifyLedger(db);
    expect(after).toMatchObject({ ok: true, postings: before.postings, entries: before.entries });
  },
);

it.skipIf(!onPostgres)(
  "`stablegate ledger verify` exits 1 with a readable report when a balance disagrees with the journal",
  async () => {
    const db = database!.db;
    const m = await newMerchant(db);
    await fund(db, m, 4n);
    const verify = () =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [...mainArgs(), "ledger", "verify"], {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? "", DATABASE_URL: database!.url!, LOG_LEVEL: "silent" },
        });
        let out = "";
        child.stdout.on("data", (c) => {
          out += c;
        });
        child.on("exit", (code) => resolve({ code, out }));
      });
    expect(await verify()).toMatchObject({ code: 0, out: expect.stringContaining("OK:") });
    await db
      .updateTable("ledger_accounts")
      .set({ balance: String(5n * UNIT) })
      .where("owner", "=", m)
      .where("kind", "=", "available")
      .execute();
    const bad = await verify();
    expect(bad.code).toBe(1);
    expect(bad.out).toContain("MISMATCH: 1 problem(s)");
    expect(bad.out).toContain(`balance_mismatch: ${m} sandbox USDT-TRC20 available`);
    expect(bad.out).toContain("stored 5000000, journal 4000000");
  },
  120_000, // two CLI processes: tens of seconds on a loaded runner
);
