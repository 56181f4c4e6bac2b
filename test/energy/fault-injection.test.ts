import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";
import { EnergyEngine } from "../../src/energy/index.js";
import { systemClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { Sweeper } from "../../src/sweep/sweeper.js";
import {
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
  RESOURCE_ACCOUNT_INDEX,
} from "../../src/wallet/derivation-path.js";
import { logger, USDT, wallet } from "../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { confirmedDeposit } from "../support/confirmed-deposit.js";
import { openTestDatabase } from "../support/db.js";
import { type BundledProgram, bundleProgram } from "../support/program.js";

// Issue #38: the energy engine keeps the sender's crash safety. Deposits on fresh TRON addresses are
// collected through activation → delegation → sweep → reclaim, each an outgoing transfer, while the
// sending process is SIGKILLed at every step (before the commit of a signed batch, after it, after
// the broadcast, after the receipt). In the end: every step exactly once on chain and in the books,
// nothing signed twice, nothing burned for energy, and no energy left delegated.

const here = dirname(fileURLToPath(import.meta.url));
const CHILD = join(here, "fault-child.ts");
const ROOT = join(here, "..", "..");
const POINTS = ["before-commit", "after-commit", "after-broadcast", "after-receipt"] as const;
const DEPOSITS = 4;
const network = "USDT-TRC20";
const address = (i: number) => wallet.address(network, "sandbox", i);
const hot = address(HOT_WALLET_INDEX);
const resource = address(RESOURCE_ACCOUNT_INDEX);
const WEI_PER_SUN = 10n ** 12n;

let node: AnvilNode;
/** The child, bundled once: each of its many starts then loads one module, not tsx's compile of hundreds. */
let program: BundledProgram;
let emulator: TronEmulator;
let token: Hex;
let dbUrl: string | undefined;
let pgliteDir: string | undefined;
let keep: (Database & { url: string | undefined }) | undefined;
let intents = 0;

async function openShared(): Promise<Database> {
  if (dbUrl) return openDatabase({ kind: "postgres", url: dbUrl, poolSize: 2 });
  return openDatabase({ kind: "pglite", dataDir: pgliteDir! });
}

beforeAll(async () => {
  program = await bundleProgram(CHILD);
  node = await startAnvil();
  token = await deployTestUsdt(node);
  emulator = await startTronEmulator(node, token);
  await mintTestUsdt(node, token, tronAddressToEvm(hot) as Hex, USDT(1));
  await node.testClient.setBalance({
    address: tronAddressToEvm(address(GAS_TANK_INDEX)) as Hex,
    value: 1_000_000_000n * WEI_PER_SUN,
  });
  // The resource account holds its reserve and a stake (given directly: the staking itself is the
  // engine test's subject).
  const r = tronAddressToEvm(resource);
  await node.testClient.setBalance({ address: r as Hex, value: 5_000_000n * WEI_PER_SUN });
  emulator.resources.freeze(r, 100_000_000_000n, "ENERGY", 100_000_000_000n);
  emulator.resources.freeze(r, 10_000_000_000n, "BANDWIDTH", 10_000_000_000n);
  keep = await openTestDatabase();
  dbUrl = keep.url;
  if (!dbUrl) {
    await keep.close();
    keep = undefined;
    pgliteDir = await mkdtemp(join(tmpdir(), "sg-energy-fault-"));
    const d = await openDatabase({ kind: "pglite", dataDir: pgliteDir });
    await migrate(d.db);
    await d.close();
  }
  const db = await openShared();
  try {
    await sql`create table fault_outcomes (intent_id text not null, status text not null, tx_hash text)`.execute(
      db.db,
    );
    const merchantId = (await createMerchantWithKeys(db.db, { email: "fault@example.com", companyName: "F" }))
      .id;
    for (let i = 0; i < DEPOSITS; i++) {
      const receipt = await mintTestUsdt(
        node,
        token,
        tronAddressToEvm(address(100 + i)) as Hex,
        USDT(20 + i),
      );
      await db.db.transaction().execute((trx) =>
        confirmedDeposit(trx, {
          deriver: wallet,
          merchantId,
          network,
          i,
          amount: USDT(20 + i),
          txHash: receipt.transactionHash,
        }),
      );
    }
    const writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
    const engine = new EnergyEngine({
      db: db.db,
      network,
      environment: "sandbox",
      writer,
      address,
      policy: { maxWaitMs: 3_600_000, burnCeilingSun: 1n, reserveSun: 10_000_000n, bandwidthStakePercent: 6 },
      logger,
      clock: systemClock,
    });
    const sweeper = new Sweeper({
      db: db.db,
      network,
      environment: "sandbox",
      writer,
      address,
      threshold: USDT(10),
      logger,
      clock: systemClock,
      energy: engine,
    });
    expect(await sweeper.tick()).toBe(DEPOSITS);
    // Activation, delegation and sweep per address now; a reclaim each later.
    intents = 4 * DEPOSITS;
  } finally {
    await db.close();
  }
}, 120_000);

afterAll(async () => {
  await program?.remove();
  await keep?.close();
  await emulator?.stop();
  await node?.stop();
  if (pgliteDir) await rm(pgliteDir, { recursive: true, force: true });
});

function runChild(point: string): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, program.args, {
      cwd: ROOT,
      env: {
        ...process.env,
        FAULT_DATABASE_URL: dbUrl ?? "",
        FAULT_PGLITE_DIR: pgliteDir ?? "",
        FAULT_TRON_URL: emulator.url,
        FAULT_TOKEN: emulator.tokenAddress,
        FAULT_POINT: point,
        FAULT_AT: "1",
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

describe("fault injection with the energy engine: SIGKILL at each step of delegate → sign → broadcast → reclaim", () => {
  it(`${DEPOSITS} fresh deposit addresses are collected with each step once, nothing signed twice, no energy left delegated`, async () => {
    const kills: Record<string, number> = Object.fromEntries(POINTS.map((p) => [p, 0]));
    const log: string[] = [];
    let finished = false;
    for (let run = 0; run < 120 && !finished; run++) {
      const point = POINTS[run % POINTS.length]!;
      const r = await runChild(point);
      log.push(`${point}:${r.signal ?? r.code}`);
      if (r.signal === "SIGKILL") {
        expect(r.stderr).toContain(`KILL ${point}`);
        kills[point]!++;
      } else {
        expect(r.code, r.stderr).toBe(0);
        finished = true;
      }
    }
    console.log(log.join(" "));
    expect(finished).toBe(true);
    for (const p of POINTS) expect(kills[p], p).toBeGreaterThanOrEqual(2);

    const db = await openShared();
    try {
      const rows = await db.db.selectFrom("outgoing_transfers").selectAll().execute();
      expect(rows).toHaveLength(intents);
      expect(rows.filter((r) => r.status !== "confirmed")).toEqual([]);
      const count = (kind: string) => rows.filter((r) => r.kind === kind).length;
      for (const kind of ["gas_topup", "resource_delegation", "sweep", "resource_reclaim"])
        expect(count(kind), kind).toBe(DEPOSITS);
      // One outcome per intent, each with the hash the row records.
      const outcomes = (
        await sql<{ intent_id: string; tx_hash: string }>`select * from fault_outcomes`.execute(db.db)
      ).rows;
      expect(outcomes).toHaveLength(intents);
      expect(new Set(outcomes.map((o) => o.intent_id)).size).toBe(intents);
      for (const o of outcomes)
        expect(rows.find((r) => r.intent_id === o.intent_id)?.tx_hash).toBe(o.tx_hash);
      // Never two that could both be mined: a new attempt is signed only once the last one expired
      // unmined (TRON's expiration, a minute: a slow restart after a kill between commit and
      // broadcast gets there), and the emulator refuses an expired one. So each intent has exactly
      // one attempt the chain executed — the last — and every earlier one never reached the chain.
      const attempts = await db.db
        .selectFrom("outgoing_transfer_attempts")
        .select(["intent_id", "seq", "tx_hash", "expires_at"])
        .orderBy("intent_id")
        .orderBy("seq")
        .execute();
      let resigned = 0;
      for (const r of rows) {
        const mine = attempts.filter((a) => a.intent_id === r.intent_id);
        const executed = mine.filter((a) => emulator.charges(a.tx_hash) !== undefined);
        expect(
          executed.map((a) => a.tx_hash),
          r.intent_id,
        ).toEqual([r.tx_hash]);
        expect(mine.at(-1)?.tx_hash).toBe(r.tx_hash);
        resigned += mine.length - 1;
      }
      console.log(`energy fault injection: ${resigned} transaction(s) re-signed after expiring unbroadcast`);
      // Every deposit in the hot wallet; every sweep on delegated energy; no energy left delegated.
      const writer = new TronChainWriter({ apiUrl: emulator.url, tokenAddress: emulator.tokenAddress });
      for (let i = 0; i < DEPOSITS; i++) expect(await writer.tokenBalance(address(100 + i))).toBe(0n);
      let total = USDT(1);
      for (let i = 0; i < DEPOSITS; i++) total += USDT(20 + i);
      expect(await writer.tokenBalance(hot)).toBe(total);
      for (const s of rows.filter((r) => r.kind === "sweep"))
        expect(emulator.charges(s.tx_hash!)).toMatchObject({ energyFee: 0n, outOfEnergy: false });
      expect(emulator.resources.delegationsOf(tronAddressToEvm(resource))).toEqual([]);
      console.log(`energy fault injection: kills per point ${JSON.stringify(kills)}`);
    } finally {
      await db.close();
    }
  }, 900_000);
});
