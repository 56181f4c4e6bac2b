import { mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { request } from "undici";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import type { Db } from "../../src/db/database.js";
import { ManualClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { Registry } from "../../src/observability/metrics.js";
import { HttpSignerClient } from "../../src/signer/http-client.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { OUTFLOW_FILE, OutflowGuard } from "../../src/signer/outflow.js";
import { SignerRejectedError, type SignRequest } from "../../src/signer/protocol.js";
import { startSignerRole } from "../../src/signer/role.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { requestTransfer } from "../support/backed-transfer.js";
import { openTestDatabase } from "../support/db.js";

// Issue #34, finding 1 and SECURITY.md: whoever controls the api, the worker AND the database can
// forge every row the signer's evidence checks read. The outflow cap bounds what they take before a
// person reacts: `SIGNER_MAX_OUTFLOW_PER_HOUR` / `_PER_DAY`, per currency type, in token units, set
// on the signer host, counted by the signer itself from what it signed (never in that database) and
// kept in its private DATA_DIR so that a restart does not reset it. A run past the cap stops
// signing withdrawals and payouts and alerts (log line + metric); a replacement of the same intent
// at the same nonce is not counted twice; cold forwards (to the signer's own cold wallet) are not
// counted.

const MNEMONIC = "test test test test test test test test test test test junk";
const SECRET = "c".repeat(48);
const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const COLD = "0x1CBd3b2770909D4e10f157cABC84C7264073C9Ec";
const ERC20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
const E = "USDT-ERC20" as const;
const USDT = (n: number) => BigInt(n) * 1_000_000n;
const dest = (i: number) => `0x${(0xa11ce000 + i).toString(16).padStart(40, "0")}`;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let dir: string;
const logLines: Record<string, unknown>[] = [];
const logger = createLogger(
  "warn",
  new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  }),
);

function erc20(to: string, amount: bigint, nonce: number, maxFee = "2000000000"): SignRequest {
  return {
    chain: "evm",
    network: E,
    environment: "sandbox",
    index: HOT_WALLET_INDEX,
    transaction: {
      chainId: 31337,
      nonce,
      to: TOKEN,
      value: "0",
      data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as `0x${string}`, amount] }),
      gas: "60000",
      maxFeePerGas: maxFee,
      maxPriorityFeePerGas: "1000000000",
    },
  };
}

/** Withdrawals with complete evidence (transaction, hold), `n` of 9 USDT each: their ids. */
async function withdrawals(prefix: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < n; i++) {
      const id = `tx_${prefix}_${i}`;
      await requestTransfer(trx, {
        intentId: id,
        kind: "withdrawal",
        network: E,
        environment: "sandbox",
        to: dest(i),
        amount: USDT(9),
      });
      ids.push(id);
    }
  });
  return ids;
}

const alerts = (from: number) => logLines.slice(from).filter((l) => l.alert === "signer_outflow_cap");

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  dir = await mkdtemp(join(tmpdir(), "sg-outflow-"));
}, 60_000);

afterAll(async () => {
  await database?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the signer's outflow cap (issue #34 finding 1, docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11)", () => {
  it("in-process: a run past the hourly cap stops signing and alerts; a restart keeps the count; the day cap follows", async () => {
    const clock = new ManualClock();
    const file = join(dir, "in-process", OUTFLOW_FILE);
    await rm(join(dir, "in-process"), { recursive: true, force: true });
    await mkdir(join(dir, "in-process"), { recursive: true, mode: 0o700 });
    const limits = {
      perHour: { [E]: USDT(20), "USDT-TRC20": USDT(20) },
      perDay: { [E]: USDT(30), "USDT-TRC20": USDT(30) },
    };
    const open = async (registry: Registry) =>
      LocalSigner.fromMnemonic(MNEMONIC, {
        db,
        logger,
        clock,
        tokenContract: () => TOKEN,
        coldWallet: () => COLD,
        outflow: await OutflowGuard.open({ limits, file, clock, logger, registry }),
      });
    const [a, b, c, d] = await withdrawals("cap", 4);
    await db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "cold_cap",
        kind: "cold_forward",
        network: E,
        environment: "sandbox",
        to: COLD,
        amount: USDT(500),
      }),
    );
    const registry = new Registry();
    let signer = await open(registry);
    await signer.sign(erc20(dest(0), USDT(9), 1), { intentId: a! });
    await signer.sign(erc20(dest(1), USDT(9), 2), { intentId: b! });
    // 18 of 20 signed this hour: 9 more would pass the cap.
    const before = logLines.length;
    await expect(signer.sign(erc20(dest(2), USDT(9), 3), { intentId: c! })).rejects.toThrow(
      /outflow cap per hour/,
    );
    expect(alerts(before)).toHaveLength(1);
    expect(alerts(before)[0]).toMatchObject({
      level: 50,
      network: E,
      environment: "sandbox",
      window: "hour",
      intentId: c,
    });
    const metrics = await registry.metrics();
    expect(metrics).toMatch(
      /stablegate_signer_outflow_cap_refusals_total\{network="USDT-ERC20",environment="sandbox",window="hour"\} 1/,
    );
    expect(metrics).toMatch(
      /stablegate_signer_outflow_units\{network="USDT-ERC20",environment="sandbox",window="hour"\} 18000000/,
    );
    // A replacement of a signed intent at its nonce (higher fees) is signed and not counted again.
    await signer.sign(erc20(dest(0), USDT(9), 1, "3000000000"), { intentId: a! });
    // A cold forward (to the signer's own cold wallet) is not an outflow.
    await signer.sign(erc20(COLD, USDT(500), 4), { intentId: "cold_cap" });
    await expect(signer.sign(erc20(dest(2), USDT(9), 3), { intentId: c! })).rejects.toThrow(
      /outflow cap per hour/,
    );
    // The record is private to the service's user.
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    // Restart: the count is read back from DATA_DIR, not reset.
    signer = await open(new Registry());
    await expect(signer.sign(erc20(dest(2), USDT(9), 3), { intentId: c! })).rejects.toThrow(
      /outflow cap per hour/,
    );

    // An hour later the hourly window has room again; the day cap (30) then stops the fourth.
    clock.advance(61 * 60_000);
    await signer.sign(erc20(dest(2), USDT(9), 3), { intentId: c! });
    const dayBefore = logLines.length;
    await expect(signer.sign(erc20(dest(3), USDT(9), 5), { intentId: d! })).rejects.toThrow(
      /outflow cap per day/,
    );
    expect(alerts(dayBefore)[0]).toMatchObject({ window: "day", intentId: d });
    // A day later it passes.
    clock.advance(24 * 3_600_000);
    await signer.sign(erc20(dest(3), USDT(9), 5), { intentId: d! });
  });

  it("the signer role over HTTP: SIGNER_MAX_OUTFLOW_* stop signing, /metrics shows it, a restart keeps the count", async () => {
    const dataDir = join(dir, "role");
    const clock = new ManualClock();
    const config = parseConfig({
      NODE_ENV: "test",
      LOG_LEVEL: "warn",
      MASTER_MNEMONIC: MNEMONIC,
      INTERNAL_SHARED_SECRET: SECRET,
      SIGNER_PORT: "0",
      SANDBOX_USDT_ERC20_CONTRACT: TOKEN,
      SIGNER_MAX_OUTFLOW_PER_HOUR: "USDT-ERC20:20,USDT-TRC20:5",
      SIGNER_MAX_OUTFLOW_PER_DAY: "100",
      DATA_DIR: dataDir,
    });
    const [a, b, c] = await withdrawals("role", 3);
    let server = await startSignerRole(config, { database, logger, clock });
    let client = new HttpSignerClient({ url: server.url, secret: SECRET });
    try {
      await client.sign(erc20(dest(0), USDT(9), 1), { intentId: a! });
      await client.sign(erc20(dest(1), USDT(9), 2), { intentId: b! });
      const before = logLines.length;
      const err = await client.sign(erc20(dest(2), USDT(9), 3), { intentId: c! }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SignerRejectedError);
      expect((err as Error).message).toMatch(/outflow cap per hour/);
      expect(alerts(before)).toHaveLength(1);
      const m = await request(`${server.url}/metrics`);
      const text = await m.body.text();
      expect(m.statusCode).toBe(200);
      expect(text).toMatch(
        /stablegate_signer_outflow_cap_refusals_total\{network="USDT-ERC20",environment="sandbox",window="hour"\} 1/,
      );
      expect(text).toMatch(
        /stablegate_signer_outflow_limit_units\{network="USDT-ERC20",environment="sandbox",window="hour"\} 20000000/,
      );
    } finally {
      await client.close();
      await server.close();
    }
    server = await startSignerRole(config, { database, logger, clock });
    client = new HttpSignerClient({ url: server.url, secret: SECRET });
    try {
      await expect(client.sign(erc20(dest(2), USDT(9), 3), { intentId: c! })).rejects.toThrow(
        /outflow cap per hour/,
      );
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("production mode: the signer role refuses to start without both caps; the variables are checked", async () => {
    const production = {
      NODE_ENV: "production",
      LOG_LEVEL: "silent",
      MASTER_MNEMONIC: MNEMONIC,
      INTERNAL_SHARED_SECRET: SECRET,
      SIGNER_PORT: "0",
      DATA_DIR: join(dir, "prod"),
    };
    for (const env of [production, { ...production, SIGNER_MAX_OUTFLOW_PER_HOUR: "5000" }]) {
      const err = await startSignerRole(parseConfig(env), { database, logger }).then(
        (s) => s.close().then(() => null),
        (e: unknown) => e,
      );
      expect((err as Error).message).toMatch(/SIGNER_MAX_OUTFLOW_PER_HOUR and SIGNER_MAX_OUTFLOW_PER_DAY/);
    }
    const capped = await startSignerRole(
      parseConfig({
        ...production,
        SIGNER_MAX_OUTFLOW_PER_HOUR: "5000",
        SIGNER_MAX_OUTFLOW_PER_DAY: "20000.5",
      }),
      { database, logger },
    );
    await capped.close();
    for (const bad of [
      "-1",
      "ten",
      "USDT-ERC20:5",
      "USDT-ERC20:5,USDT-BEP20:5",
      "USDT-ERC20:5,USDT-ERC20:6,USDT-TRC20:1",
      "1.1234567",
    ]) {
      expect(() => parseConfig({ ...production, SIGNER_MAX_OUTFLOW_PER_DAY: bad }), bad).toThrow(ConfigError);
    }
  });
});
