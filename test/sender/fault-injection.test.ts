import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { type Hex, parseAbiItem } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
// Intents with the evidence the signer checks (issue #34): a backing transaction and its hold.
import { requestTransfer } from "../support/backed-transfer.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { openTestDatabase } from "../support/db.js";
import { type BundledProgram, bundleProgram } from "../support/program.js";
import { wallet } from "./support.js";

const here = dirname(fileURLToPath(import.meta.url));
const CHILD = join(here, "fault-child.ts");
const ROOT = join(here, "..", "..");
const POINTS = ["before-commit", "after-commit", "after-broadcast", "after-receipt"] as const;
const TRANSFERS = 60;
const hot = wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;
const recipient = (i: number) => `0x${(0xfa0000 + i).toString(16).padStart(40, "0")}` as Hex;
/** Issue #22: one cold forward among the withdrawals (the signer allows it to its cold wallet only). */
const COLD = "0x00000000000000000000000000000000000c01d5" as Hex;
const COLD_UNITS = 7_777_777n;
const INTENTS = TRANSFERS + 1;
const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

let node: AnvilNode;
/** The child, bundled once: each of its many starts then loads one module, not tsx's compile of hundreds. */
let program: BundledProgram;
let token: Hex;
let dbUrl: string | undefined;
let pgliteDir: string | undefined;
let keep: (Database & { url: string | undefined }) | undefined;

async function openShared(): Promise<Database> {
  if (dbUrl) return openDatabase({ kind: "postgres", url: dbUrl, poolSize: 2 });
  return openDatabase({ kind: "pglite", dataDir: pgliteDir! });
}

beforeAll(async () => {
  program = await bundleProgram(CHILD);
  node = await startAnvil();
  token = await deployTestUsdt(node);
  await mintTestUsdt(node, token, hot, 10n ** 12n);
  await node.testClient.setBalance({ address: hot, value: 10n ** 20n });
  keep = await openTestDatabase();
  dbUrl = keep.url;
  if (!dbUrl) {
    // PGlite is one process's database: the children open it from disk one after another.
    await keep.close();
    keep = undefined;
    pgliteDir = await mkdtemp(join(tmpdir(), "sg-fault-"));
    const d = await openDatabase({ kind: "pglite", dataDir: pgliteDir });
    await migrate(d.db);
    await d.close();
  }
  const db = await openShared();
  await sql`create table fault_outcomes (intent_id text not null, status text not null, tx_hash text)`.execute(
    db.db,
  );
  await db.db.transaction().execute(async (trx) => {
    for (let i = 0; i < TRANSFERS; i++) {
      await requestTransfer(trx, {
        intentId: `tx_fault_${i}`,
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: recipient(i),
        amount: BigInt(1_000_000 + i),
      });
      if (i === TRANSFERS / 2)
        await requestTransfer(trx, {
          intentId: "cold_fault",
          kind: "cold_forward",
          network: "USDT-ERC20",
          environment: "sandbox",
          to: COLD,
          amount: COLD_UNITS,
        });
    }
  });
  await db.close();
}, 120_000);

afterAll(async () => {
  await program?.remove();
  await keep?.close();
  await node?.stop();
  if (pgliteDir) await rm(pgliteDir, { recursive: true, force: true });
});

function runChild(
  point: string,
  at: number,
): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, program.args, {
      cwd: ROOT,
      env: {
        ...process.env,
        FAULT_DATABASE_URL: dbUrl ?? "",
        FAULT_PGLITE_DIR: pgliteDir ?? "",
        FAULT_RPC_URL: node.rpcUrl,
        FAULT_TOKEN: token,
        FAULT_COLD: COLD,
        FAULT_POINT: point,
        FAULT_AT: String(at),
        FAULT_BATCH: "5",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe("fault injection: SIGKILL of the sending process at every step", () => {
  it(`${TRANSFERS} withdrawals and a cold forward end with exactly one on-chain transfer and one outcome each`, async () => {
    const kills: Record<string, number> = Object.fromEntries(POINTS.map((p) => [p, 0]));
    let finished = false;
    const log: string[] = [];
    for (let run = 0; run < 120 && !finished; run++) {
      // Each run dies the first time it reaches its step, so every run makes a little progress
      // (a batch signed, broadcast or verified) and the next one must recover it.
      const point = POINTS[run % POINTS.length]!;
      const r = await runChild(point, 1);
      log.push(`${point}:${r.signal ?? r.code}`);
      if (r.signal === "SIGKILL") {
        expect(r.stderr).toContain(`KILL ${point}`);
        kills[point]!++;
      } else {
        // A clean exit: the run drained everything before reaching its step.
        expect(r.code, r.stderr).toBe(0);
        finished = true;
      }
    }
    console.log(log.join(" "));
    expect(finished).toBe(true);
    // Every kill point was hit several times while transfers were in flight.
    for (const p of POINTS) expect(kills[p], p).toBeGreaterThanOrEqual(2);

    const db = await openShared();
    try {
      const rows = await db.db.selectFrom("outgoing_transfers").selectAll().execute();
      expect(rows).toHaveLength(INTENTS);
      expect(rows.every((r) => r.status === "confirmed")).toBe(true);
      const outcomes = (
        await sql<{
          intent_id: string;
          status: string;
          tx_hash: string;
        }>`select * from fault_outcomes`.execute(db.db)
      ).rows;
      const perIntent = new Map<string, number>();
      for (const o of outcomes) perIntent.set(o.intent_id, (perIntent.get(o.intent_id) ?? 0) + 1);
      expect(outcomes).toHaveLength(INTENTS);
      expect([...perIntent.values()].every((n) => n === 1)).toBe(true);

      // On-chain: every Transfer of the token from the hot wallet, from genesis.
      const logs = await node.publicClient.getLogs({
        address: token,
        event: TRANSFER,
        args: { from: hot },
        fromBlock: 0n,
        toBlock: "latest",
      });
      expect(logs).toHaveLength(INTENTS);
      // The cold forward: exactly once, exactly its amount.
      const cold = logs.filter((l) => l.args.to?.toLowerCase() === COLD.toLowerCase());
      expect(cold.map((l) => l.args.value)).toEqual([COLD_UNITS]);
      const byRecipient = new Map(logs.map((l) => [l.args.to!.toLowerCase(), l]));
      for (let i = 0; i < TRANSFERS; i++) {
        const log = byRecipient.get(recipient(i).toLowerCase());
        expect(log?.args.value).toBe(BigInt(1_000_000 + i));
        const row = rows.find((r) => r.intent_id === `tx_fault_${i}`)!;
        expect(row.tx_hash).toBe(log?.transactionHash);
        expect(outcomes.find((o) => o.intent_id === row.intent_id)?.tx_hash).toBe(log?.transactionHash);
      }
      const attempts = await db.db.selectFrom("outgoing_transfer_attempts").select("intent_id").execute();
      // No intent was ever signed twice (no provable drop happened here).
      expect(attempts).toHaveLength(INTENTS);
      console.log(`fault injection: kills per point ${JSON.stringify(kills)}`);
    } finally {
      await db.close();
    }
  }, 600_000);
});
