/**
 * `npm run bench:sender` — transfers per second through the whole sending pipeline on a real anvil
 * node: queue (requestTransfer) → sign (signer) → store → broadcast → verify on-chain (receipt +
 * Transfer log) → outcome hook, one confirmation, anvil automining.
 *
 * Run twice over BENCH_TRANSFERS (300) USDT-ERC20 withdrawals from one hot wallet:
 * 1. signer in-process (`serve`);
 * 2. signer as a separate process (`stablegate signer`: HTTP + HMAC with INTERNAL_SHARED_SECRET).
 * Prints transfers/s of each, the ratio, and the signer's own rate (sign calls/s in isolation).
 *
 * Database: BENCH_DATABASE_URL (a `stablegate_bench_sender` database is recreated there), else
 * in-memory PGlite.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Hex } from "viem";
import { EvmChainWriter } from "../src/chains/evm/evm-writer.js";
import { systemClock } from "../src/lib/clock.js";
import { createLogger } from "../src/observability/logger.js";
import { requestTransfer } from "../src/sender/intents.js";
import { TransferOutcomes } from "../src/sender/outcomes.js";
import { Sender } from "../src/sender/sender.js";
import { HttpSignerClient } from "../src/signer/http-client.js";
import { LocalSigner } from "../src/signer/local-signer.js";
import type { Signer } from "../src/signer/protocol.js";
import { startSignerServer } from "../src/signer/server.js";
import { AddressDeriver } from "../src/wallet/address-deriver.js";
import { HOT_WALLET_INDEX } from "../src/wallet/derivation-path.js";
import { deployTestUsdt, mintTestUsdt, startAnvil } from "../test/support/chain/anvil.js";
import { freshDatabase } from "./support.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const SECRET = "bench-internal-shared-secret-0123456789abcdef";
const N = Number(process.env.BENCH_TRANSFERS ?? 300);
const ADMIN_URL = process.env.BENCH_DATABASE_URL;

if (process.argv.includes("--signer-child")) {
  // The separate signer process.
  const server = await startSignerServer({
    signer: LocalSigner.fromMnemonic(MNEMONIC),
    secret: SECRET,
    host: "127.0.0.1",
    port: 0,
    clock: systemClock,
  });
  process.stdout.write(`LISTENING ${server.url}\n`);
  process.on("SIGTERM", () => void server.close().then(() => process.exit(0)));
} else {
  await main();
}

function startSignerProcess(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), "--signer-child"],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /LISTENING (\S+)/.exec(out);
      if (m?.[1]) resolve({ url: m[1], child });
    });
    child.on("exit", (code) => reject(new Error(`signer exited with ${code}`)));
  });
}

async function run(label: string, signer: Signer): Promise<number> {
  const node = await startAnvil();
  const database = await freshDatabase(ADMIN_URL, "stablegate_bench_sender");
  try {
    const token = await deployTestUsdt(node);
    const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
    const hot = wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX) as Hex;
    await mintTestUsdt(node, token, hot, 10n ** 15n);
    await node.testClient.setBalance({ address: hot, value: 10n ** 22n });
    const outcomes = new TransferOutcomes();
    let confirmed = 0;
    outcomes.register("withdrawal", async (_trx, o) => {
      if (o.status === "confirmed") confirmed++;
    });
    const sender = new Sender({
      db: database.db,
      network: "USDT-ERC20",
      environment: "sandbox",
      writer: new EvmChainWriter({ rpcUrl: node.rpcUrl, tokenAddress: token }),
      signer,
      address: (i) => wallet.address("USDT-ERC20", "sandbox", i),
      outcomes,
      confirmations: 1,
      logger: createLogger("silent"),
      clock: systemClock,
      recheckMs: 0,
      batchSize: 50,
    });
    await database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < N; i++) {
        await requestTransfer(trx, {
          intentId: `tx_bench_${i}`,
          kind: "withdrawal",
          network: "USDT-ERC20",
          environment: "sandbox",
          to: `0x${(0xbe0000 + i).toString(16).padStart(40, "0")}`,
          amount: BigInt(1_000 + i),
        });
      }
    });
    const t0 = performance.now();
    const open = await sender.drain(600_000, 0);
    const seconds = (performance.now() - t0) / 1000;
    if (open !== 0 || confirmed !== N)
      throw new Error(`${label}: ${open} still open, ${confirmed}/${N} confirmed`);
    const rate = N / seconds;
    console.log(
      `${label.padEnd(28)} ${N} transfers confirmed in ${seconds.toFixed(2)} s = ${rate.toFixed(1)} transfers/s`,
    );
    return rate;
  } finally {
    await database.close();
    await node.stop();
  }
}

async function signRate(label: string, signer: Signer): Promise<void> {
  const req = (nonce: number) => ({
    chain: "evm" as const,
    network: "USDT-ERC20" as const,
    environment: "sandbox" as const,
    index: 0,
    transaction: {
      chainId: 31337,
      nonce,
      to: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
      value: "0",
      data: `0xa9059cbb${"0".repeat(24)}${"ab".repeat(20)}${(1000).toString(16).padStart(64, "0")}`,
      gas: "60000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
    },
  });
  const n = 1000;
  const t0 = performance.now();
  for (let i = 0; i < n; i += 50)
    await Promise.all(Array.from({ length: 50 }, (_, j) => signer.sign(req(i + j))));
  const s = (performance.now() - t0) / 1000;
  console.log(`${label.padEnd(28)} ${(n / s).toFixed(0)} signatures/s (50 concurrent)`);
}

async function main(): Promise<void> {
  console.log(
    `bench:sender — ${N} USDT-ERC20 transfers on anvil, database ${ADMIN_URL ? "PostgreSQL" : "PGlite (in memory)"}`,
  );
  const local = LocalSigner.fromMnemonic(MNEMONIC);
  const { url, child } = await startSignerProcess();
  const remote = new HttpSignerClient({ url, secret: SECRET });
  try {
    await signRate("signer in-process", local);
    await signRate("signer separate process", remote);
    const a = await run("pipeline, signer in-process", local);
    const b = await run("pipeline, signer separate", remote);
    console.log(`ratio separate / in-process: ${(b / a).toFixed(2)}`);
  } finally {
    await remote.close();
    child.kill("SIGTERM");
  }
}
