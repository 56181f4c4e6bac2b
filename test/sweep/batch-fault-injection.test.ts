import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Hex, keccak256, parseAbiItem, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delegationCode, sweeperAddress } from "../../src/chains/evm/sweeper.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { USDT, wallet } from "../sender/support.js";
import { type AnvilNode, deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { confirmedDeposit } from "../support/confirmed-deposit.js";
import { openTestDatabase } from "../support/db.js";
import { type BundledProgram, bundleProgram } from "../support/program.js";

// Issue #39: batched sweeps keep the sender's crash safety. 20 deposit addresses without ETH are
// collected in batches of 5 through the EIP-7702 sweeper (its deployment first), while the process
// is SIGKILLed at every step: between the sweeper's carried sweeps and their batch, before the
// commit of a signed batch, after it, after the broadcast, after the receipt. In the end every
// address moved its tokens to the hot wallet exactly once (one Transfer each on chain), none is
// forgotten, nothing was signed twice, no ETH is on any deposit address.

const here = dirname(fileURLToPath(import.meta.url));
const CHILD = join(here, "batch-fault-child.ts");
const ROOT = join(here, "..", "..");
const SENDER_POINTS = ["before-commit", "after-commit", "after-broadcast", "after-receipt"] as const;
const DEPOSITS = 20;
const network = "USDT-ERC20";
const address = (i: number) => wallet.address(network, "sandbox", i) as Hex;
const hot = address(HOT_WALLET_INDEX);
const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

let node: AnvilNode;
/** The child, bundled once: each of its many starts then loads one module, not tsx's compile of hundreds. */
let program: BundledProgram;
let token: Hex;
let dbUrl: string | undefined;
let pgliteDir: string | undefined;
let keep: (Database & { url: string | undefined }) | undefined;
const deposits: { address: Hex; amount: bigint }[] = [];

async function openShared(): Promise<Database> {
  if (dbUrl) return openDatabase({ kind: "postgres", url: dbUrl, poolSize: 2 });
  return openDatabase({ kind: "pglite", dataDir: pgliteDir! });
}

beforeAll(async () => {
  program = await bundleProgram(CHILD);
  node = await startAnvil(["--hardfork", "prague"]);
  token = await deployTestUsdt(node);
  await node.testClient.setBalance({ address: address(GAS_TANK_INDEX), value: 10n ** 20n });
  keep = await openTestDatabase();
  dbUrl = keep.url;
  if (!dbUrl) {
    await keep.close();
    keep = undefined;
    pgliteDir = await mkdtemp(join(tmpdir(), "sg-batch-fault-"));
    const d = await openDatabase({ kind: "pglite", dataDir: pgliteDir });
    await migrate(d.db);
    await d.close();
  }
  const db = await openShared();
  try {
    const merchantId = (await createMerchantWithKeys(db.db, { email: "bf@example.com", companyName: "BF" }))
      .id;
    for (let i = 0; i < DEPOSITS; i++) {
      const amount = USDT(20 + i);
      const { address: a } = await db.db.transaction().execute((trx) =>
        confirmedDeposit(trx, {
          deriver: wallet,
          merchantId,
          network,
          i,
          amount,
          txHash: keccak256(toHex(`batch fault ${i}`)),
        }),
      );
      await mintTestUsdt(node, token, a as Hex, amount);
      deposits.push({ address: a as Hex, amount });
    }
  } finally {
    await db.close();
  }
}, 120_000);

afterAll(async () => {
  await program?.remove();
  await keep?.close();
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
        FAULT_RPC_URL: node.rpcUrl,
        FAULT_TOKEN: token,
        FAULT_POINT: point,
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

describe("fault injection with batched EIP-7702 sweeps: SIGKILL at each step", () => {
  it(`${DEPOSITS} addresses in batches of 5: each swept exactly once, none forgotten, nothing signed twice`, async () => {
    // The sweeper's step first (its carried sweeps are queued once), then the sender's in turn.
    const points = ["before-assemble", ...SENDER_POINTS];
    const kills: Record<string, number> = Object.fromEntries(points.map((p) => [p, 0]));
    const log: string[] = [];
    let finished = false;
    for (let run = 0; run < 120 && !finished; run++) {
      const point = run === 0 ? "before-assemble" : SENDER_POINTS[(run - 1) % SENDER_POINTS.length]!;
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
    expect(kills["before-assemble"]).toBe(1);
    for (const p of SENDER_POINTS) expect(kills[p], p).toBeGreaterThanOrEqual(2);

    const db = await openShared();
    try {
      const rows = await db.db.selectFrom("outgoing_transfers").selectAll().execute();
      expect(rows.filter((r) => r.status !== "confirmed").map((r) => [r.kind, r.status, r.reason])).toEqual(
        [],
      );
      const sweeps = rows.filter((r) => r.kind === "sweep");
      const batches = rows.filter((r) => r.kind === "sweep_batch");
      expect(sweeps).toHaveLength(DEPOSITS);
      expect(batches).toHaveLength(DEPOSITS / 5);
      expect(rows.filter((r) => r.kind === "sweeper_deploy")).toHaveLength(1);
      expect(rows.filter((r) => r.kind === "gas_topup")).toEqual([]);
      // Every sweep in a batch, and a batch's transaction is its sweeps'.
      for (const s of sweeps) {
        const b = batches.find((x) => x.intent_id === s.carrier_intent_id);
        expect(b?.tx_hash).toBe(s.tx_hash);
      }
      // Nothing signed twice: one attempt per signed transaction (no provable drop happened here).
      const attempts = await db.db.selectFrom("outgoing_transfer_attempts").select("intent_id").execute();
      expect(attempts).toHaveLength(batches.length + 1);

      // On chain: each address's tokens moved once, all of it, to the hot wallet; no ETH on any.
      const logs = await node.publicClient.getLogs({
        address: token,
        event: TRANSFER,
        args: { to: hot },
        fromBlock: 0n,
      });
      let total = 0n;
      for (const d of deposits) {
        const moved = logs.filter((l) => l.args.from?.toLowerCase() === d.address.toLowerCase());
        expect(moved.map((l) => l.args.value)).toEqual([d.amount]);
        expect(await node.publicClient.getBalance({ address: d.address })).toBe(0n);
        expect((await node.publicClient.getCode({ address: d.address }))?.toLowerCase()).toBe(
          delegationCode(sweeperAddress(hot, token)),
        );
        total += d.amount;
      }
      expect(logs).toHaveLength(DEPOSITS);
      console.log(`batched sweep fault injection: kills per point ${JSON.stringify(kills)}, total ${total}`);
    } finally {
      await db.close();
    }
  }, 600_000);
});
