/**
 * `npm run bench:sender` — transfers per second through the whole sending pipeline on a real anvil
 * node: queue (requestTransfer) → sign (signer, its transfer policy included) → store → broadcast →
 * verify on-chain (receipt + Transfer log) → outcome hook, one confirmation, anvil automining.
 *
 * Run twice over BENCH_TRANSFERS (300) USDT-ERC20 withdrawals from one hot wallet, each run on a
 * fresh database and anvil node, both signers built from the same configuration (the environment
 * a `stablegate` process would get):
 * 1. signer in-process (as `serve` runs it: `createLocalSigner`, its policy reading through the
 *    sender's transaction);
 * 2. signer as a separate process (`stablegate signer`, the real role: HTTP + HMAC with
 *    INTERNAL_SHARED_SECRET, its policy reading the intents with its own DATABASE_URL connection).
 * The signer signs only what the policy allows (signer/policy.ts): every measured signature is for
 * a withdrawal intent recorded with `requestTransfer`, as the withdrawal service records them. Each
 * run first checks that the signer refuses a transfer no intent backs, then measures the signer's
 * own rate (sign calls/s over the open intents, 50 concurrent; nothing is broadcast), then the
 * pipeline. The two modes alternate, in-process then separate, BENCH_ROUNDS times (default 3;
 * `alternate` in support.ts); prints every run, and per round the ratio separate / in-process of
 * the pipeline's transfers/s and of the signer's rate, with their median and spread.
 *
 * Database: PostgreSQL only — the separate signer opens the database itself, and the embedded
 * database serves one process (the signer role refuses to start without DATABASE_URL). A
 * `stablegate_bench_sender` database is recreated on BENCH_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres) for each run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { encodeFunctionData, type Hex, parseAbi } from "viem";
import { EvmChainWriter } from "../src/chains/evm/evm-writer.js";
import { parseConfig } from "../src/config/config.js";
import { type Database, openDatabase } from "../src/db/database.js";
import { migrate } from "../src/db/migrate.js";
import { systemClock } from "../src/lib/clock.js";
import { createLogger } from "../src/observability/logger.js";
import { requestTransfer } from "../src/sender/intents.js";
import { TransferOutcomes } from "../src/sender/outcomes.js";
import { Sender } from "../src/sender/sender.js";
import { HttpSignerClient } from "../src/signer/http-client.js";
import { createLocalSigner } from "../src/signer/local-signer.js";
import { type Signer, SignerRejectedError } from "../src/signer/protocol.js";
import { AddressDeriver } from "../src/wallet/address-deriver.js";
import { HOT_WALLET_INDEX } from "../src/wallet/derivation-path.js";
import { deployTestUsdt, mintTestUsdt, startAnvil } from "../test/support/chain/anvil.js";
import {
  alternate,
  benchRounds,
  freePort,
  MAIN,
  ROOT,
  recreateDatabase,
  reportRounds,
  stopChild,
} from "./support.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const SECRET = "bench-internal-shared-secret-0123456789abcdef";
const N = Number(process.env.BENCH_TRANSFERS ?? 300);
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DB_NAME = "stablegate_bench_sender";
const SIGN_CALLS = 1000;
const CONCURRENCY = 50;
const TRANSFER = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
const ROUNDS = benchRounds();

type Mode = "in-process" | "separate";

/** The i-th withdrawal of a run: its destination and amount (base units). */
const withdrawal = (i: number) => ({
  to: `0x${(0xbe0000 + i).toString(16).padStart(40, "0")}` as Hex,
  amount: BigInt(1_000 + i),
});

await main();

async function main(): Promise<void> {
  console.log(
    `bench:sender — ${N} USDT-ERC20 transfers on anvil, database PostgreSQL (${new URL(ADMIN_URL).host})`,
  );
  const rounds = await alternate(
    ROUNDS,
    { a: "in-process", b: "separate" } as const,
    (mode, _side, round) => {
      console.log(`\nround ${round}, signer ${mode}`);
      return run(mode);
    },
  );
  reportRounds({
    title: "pipeline transfers/s per round (in-process, then separate, back to back)",
    a: "in-process",
    b: "separate",
    ratioName: "ratio separate / in-process (pipeline)",
    rounds,
    value: (r) => r.pipeline,
    ratio: (a, b) => b / a,
    format: (x) => x.toFixed(1),
  });
  reportRounds({
    title: "signatures/s per round (the signer alone, 50 concurrent)",
    a: "in-process",
    b: "separate",
    ratioName: "ratio separate / in-process (signer)",
    rounds,
    value: (r) => r.signatures,
    ratio: (a, b) => b / a,
  });
}

/** The environment of a `stablegate` process for this run (sandbox USDT-ERC20 on the anvil token). */
function signerEnv(dataDir: string, databaseUrl: string, token: Hex, port: number): Record<string, string> {
  return {
    NODE_ENV: "development",
    LOG_LEVEL: "error",
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    MASTER_MNEMONIC: MNEMONIC,
    INTERNAL_SHARED_SECRET: SECRET,
    SANDBOX_USDT_ERC20_CONTRACT: token,
    SIGNER_HOST: "127.0.0.1",
    SIGNER_PORT: String(port),
  };
}

/** `stablegate signer` as a child process, once its `/healthz` answers. */
async function startSignerRole(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, "signer"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "inherit", "inherit"],
  });
  let exited: number | null | undefined;
  child.once("exit", (code) => {
    exited = code;
  });
  const url = `http://${env.SIGNER_HOST}:${env.SIGNER_PORT}`;
  for (let i = 0; i < 600; i++) {
    if (exited !== undefined) throw new Error(`the signer role exited with ${exited}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, child };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error("the signer role did not start");
}

async function run(mode: Mode): Promise<{ pipeline: number; signatures: number }> {
  const label = mode === "in-process" ? "signer in-process" : "signer separate process";
  const node = await startAnvil();
  const databaseUrl = await recreateDatabase(ADMIN_URL, DB_NAME);
  const database: Database = await openDatabase({ kind: "postgres", url: databaseUrl, poolSize: 5 });
  const dataDir = await mkdtemp(path.join(tmpdir(), "stablegate-bench-sender-"));
  let child: ChildProcess | undefined;
  let remote: HttpSignerClient | undefined;
  try {
    await migrate(database.db);
    const token = await deployTestUsdt(node);
    const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
    const hot = wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;
    await mintTestUsdt(node, token, hot, 10n ** 15n);
    await node.testClient.setBalance({ address: hot, value: 10n ** 22n });

    // The withdrawals, queued (and committed) as the withdrawal service queues them.
    await database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < N; i++) {
        await requestTransfer(trx, {
          intentId: `tx_bench_${i}`,
          kind: "withdrawal",
          network: "USDT-ERC20",
          environment: "sandbox",
          ...withdrawal(i),
        });
      }
    });

    const env = signerEnv(dataDir, databaseUrl, token, await freePort());
    let signer: Signer;
    if (mode === "in-process") {
      signer = await createLocalSigner(parseConfig(env), database.db, createLogger("error"));
    } else {
      const started = await startSignerRole(env);
      child = started.child;
      remote = new HttpSignerClient({ url: started.url, secret: SECRET });
      signer = remote;
    }
    const chainId = await node.publicClient.getChainId();
    const signRequest = (nonce: number, to: Hex, amount: bigint) => ({
      chain: "evm" as const,
      network: "USDT-ERC20" as const,
      environment: "sandbox" as const,
      index: HOT_WALLET_INDEX,
      transaction: {
        chainId,
        nonce,
        to: token,
        value: "0",
        data: encodeFunctionData({ abi: TRANSFER, functionName: "transfer", args: [to, amount] }),
        gas: "60000",
        maxFeePerGas: "2000000000",
        maxPriorityFeePerGas: "1000000000",
      },
    });

    await expectRefusal(label, signer, signRequest(0, withdrawal(0).to, withdrawal(0).amount + 1n));
    const signatures = await signRate(label, signer, (k) => {
      const w = withdrawal(k % N);
      return signRequest(k, w.to, w.amount);
    });
    return { pipeline: await pipeline(label, database, signer, node.rpcUrl, token, wallet), signatures };
  } finally {
    await remote?.close();
    if (child) await stopChild(child);
    await database.close();
    await node.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The policy is live in the measured signer: a transfer no open intent backs is refused. */
async function expectRefusal(
  label: string,
  signer: Signer,
  request: Parameters<Signer["sign"]>[0],
): Promise<void> {
  try {
    await signer.sign(request);
  } catch (err) {
    if (err instanceof SignerRejectedError) {
      console.log(`${label.padEnd(28)} refuses a transfer without an intent (${err.message})`);
      return;
    }
    throw err;
  }
  throw new Error(`${label}: signed a transfer no intent backs`);
}

/** The signer's own rate: SIGN_CALLS calls for open intents, CONCURRENCY at a time; signatures/s. */
async function signRate(
  label: string,
  signer: Signer,
  request: (k: number) => Parameters<Signer["sign"]>[0],
): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < SIGN_CALLS; i += CONCURRENCY)
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, SIGN_CALLS - i) }, (_, j) => signer.sign(request(i + j))),
    );
  const s = (performance.now() - t0) / 1000;
  console.log(
    `${label.padEnd(28)} ${(SIGN_CALLS / s).toFixed(0)} signatures/s (${CONCURRENCY} concurrent, policy checked)`,
  );
  return SIGN_CALLS / s;
}

/** The N queued withdrawals through the sender until all are confirmed; transfers/s. */
async function pipeline(
  label: string,
  database: Database,
  signer: Signer,
  rpcUrl: string,
  token: Hex,
  wallet: AddressDeriver,
): Promise<number> {
  const outcomes = new TransferOutcomes();
  let confirmed = 0;
  outcomes.register("withdrawal", async (_trx, o) => {
    if (o.status === "confirmed") confirmed++;
  });
  const sender = new Sender({
    db: database.db,
    network: "USDT-ERC20",
    environment: "sandbox",
    writer: new EvmChainWriter({ rpcUrl, tokenAddress: token }),
    signer,
    address: (i) => wallet.address("USDT-ERC20", "sandbox", i),
    outcomes,
    confirmations: 1,
    logger: createLogger("silent"),
    clock: systemClock,
    recheckMs: 0,
    batchSize: 50,
  });
  const t0 = performance.now();
  const open = await sender.drain(600_000, 0);
  const seconds = (performance.now() - t0) / 1000;
  if (open !== 0 || confirmed !== N)
    throw new Error(`pipeline, ${label}: ${open} still open, ${confirmed}/${N} confirmed`);
  const rate = N / seconds;
  console.log(
    `${`pipeline, ${label}`.padEnd(28)} ${N} transfers confirmed in ${seconds.toFixed(2)} s = ${rate.toFixed(1)} transfers/s`,
  );
  return rate;
}
