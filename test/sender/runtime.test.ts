import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { senderJobs } from "../../src/sender/jobs.js";
import { HttpSignerClient } from "../../src/signer/http-client.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { startSignerRole } from "../../src/signer/role.js";
import { createRoleSigner } from "../../src/signer/role-signer.js";
import { JobRunner } from "../../src/worker/runner.js";
// Intents with the evidence the signer checks (issue #34): a backing transaction and its hold.
import { requestTransfer } from "../support/backed-transfer.js";
import { openTestDatabase } from "../support/db.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { MNEMONIC, wallet } from "./support.js";

describe("sending inside serve (in-process signer, worker jobs)", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { MASTER_MNEMONIC: MNEMONIC, METRICS_TOKEN: "m".repeat(32) } });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("a queued sandbox transfer is sent, verified and finished by the worker job within about a second", async () => {
    expect(svc.proc.runtime.signer).toBeInstanceOf(LocalSigner);
    const db = svc.database.db;
    const to = wallet.address("USDT-ERC20", "sandbox", 777);
    const t0 = Date.now();
    await db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "swp_runtime_1",
        kind: "sweep",
        network: "USDT-ERC20",
        environment: "sandbox",
        to,
        amount: 1_234_567n,
      }),
    );
    let row: { status: string; tx_hash: string | null } | undefined;
    while (Date.now() - t0 < 10_000) {
      row = await db
        .selectFrom("outgoing_transfers")
        .select(["status", "tx_hash"])
        .where("intent_id", "=", "swp_runtime_1")
        .executeTakeFirst();
      if (row?.status === "confirmed" || row?.status === "failed") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const ms = Date.now() - t0;
    expect(row?.status).toBe("confirmed");
    // ~1 s is the goal (100 ms polling); the bound leaves room for a loaded test machine.
    expect(ms).toBeLessThan(5_000);
    const sim = svc.proc.runtime.chains.simulator("USDT-ERC20");
    expect(await sim.balanceOf(to)).toBe(1_234_567n);
    expect((await sim.transaction(row!.tx_hash!))?.from).toBe(wallet.address("USDT-ERC20", "sandbox", 0));

    const operator = { authorization: `Bearer ${"m".repeat(32)}` };
    const ready = await call(svc.urls.production, "/readyz", { headers: operator });
    expect(ready.body.checks["sending:USDT-ERC20:sandbox"]).toMatchObject({
      status: "ok",
      detail: expect.stringMatching(/hot wallet .*0 open transfers, 0 pending sweeps/),
    });
    const metrics = await fetch(`${svc.urls.production}/metrics`, { headers: operator }).then((r) =>
      r.text(),
    );
    expect(metrics).toMatch(/stablegate_outgoing_open\{network="USDT-ERC20",environment="sandbox"\} 0/);
    expect(metrics).toMatch(/stablegate_outgoing_waiting_funds\{/);
    expect(metrics).toMatch(/stablegate_sweeps_pending\{/);
  });
});

describe("an idle sender job", () => {
  it("sleeping a minute when idle, it sends a request at once: the request's commit wakes it", async () => {
    // `api` runs no jobs of its own: the only sender is the one started here.
    const svc = await startTestService({ role: "api", env: { MASTER_MNEMONIC: MNEMONIC } });
    const jobs = senderJobs(svc.proc.runtime, "wake-test", { idleMs: 60_000 }).filter(
      (j) => j.name === "sender:USDT-TRC20:sandbox",
    );
    expect(jobs).toHaveLength(1);
    const runner = new JobRunner(jobs, createLogger("silent"));
    runner.start();
    try {
      const db = svc.database.db;
      const status = async (id: string) =>
        (
          await db
            .selectFrom("outgoing_transfers")
            .select("status")
            .where("intent_id", "=", id)
            .executeTakeFirst()
        )?.status;
      // Two requests, the second after the job went back to its idle sleep: both leave at once.
      for (const id of ["swp_wake_1", "swp_wake_2"]) {
        await new Promise((r) => setTimeout(r, 300));
        await db.transaction().execute((trx) =>
          requestTransfer(trx, {
            intentId: id,
            kind: "sweep",
            network: "USDT-TRC20",
            environment: "sandbox",
            to: wallet.address("USDT-TRC20", "sandbox", 778),
            amount: 1_000n,
          }),
        );
        const t0 = Date.now();
        while (Date.now() - t0 < 20_000 && (await status(id)) !== "confirmed") {
          await new Promise((r) => setTimeout(r, 20));
        }
        expect(await status(id)).toBe("confirmed");
        // Without the wake-up the job would have slept until its minute was up.
        expect(Date.now() - t0).toBeLessThan(20_000);
      }
    } finally {
      await runner.stop();
      await svc.close();
    }
  }, 60_000);
});

describe("the signer role", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "sg-signer-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("serves signatures over HTTP to a worker configured with SIGNER_URL; api and a worker without it have no signer", async () => {
    const secret = "i".repeat(48);
    const token = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
    const base = {
      NODE_ENV: "test",
      DATA_DIR: dir,
      MASTER_MNEMONIC: MNEMONIC,
      INTERNAL_SHARED_SECRET: secret,
      SANDBOX_USDT_ERC20_CONTRACT: token,
    };
    const database = await openTestDatabase();
    const deps = { db: database.db, logger: createLogger("silent") };
    const recipient = "0x52908400098527886E0F7030069857D2E4169EE7";
    // The signer's policy: a hot-wallet transfer is signed for a recorded withdrawal only.
    await database.db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: "tx_signer_role_1",
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment: "sandbox",
        to: recipient,
        amount: 1_000_000n,
      }),
    );
    const server = await startSignerRole(parseConfig({ ...base, SIGNER_PORT: "0", LOG_LEVEL: "silent" }), {
      database,
      logger: deps.logger,
    });
    try {
      const workerConfig = parseConfig({ ...base, SIGNER_URL: server.url });
      const secrets = {
        INTERNAL_SHARED_SECRET: secret,
        JWT_SECRET: "j".repeat(40),
        SECRET_ENCRYPTION_KEY: "0".repeat(64),
      };
      const signer = await createRoleSigner(workerConfig, "worker", secrets, deps);
      expect(signer).toBeInstanceOf(HttpSignerClient);
      const signed = await signer!.sign(
        {
          chain: "evm",
          network: "USDT-ERC20",
          environment: "sandbox",
          index: 0,
          transaction: {
            chainId: 1,
            nonce: 0,
            to: token,
            value: "0",
            data: encodeFunctionData({
              abi: parseAbi(["function transfer(address to, uint256 value) returns (bool)"]),
              functionName: "transfer",
              args: [recipient, 1_000_000n],
            }),
            gas: "60000",
            maxFeePerGas: "2",
            maxPriorityFeePerGas: "1",
          },
        },
        { intentId: "tx_signer_role_1" },
      );
      expect(signed.from).toBe(wallet.address("USDT-ERC20", "sandbox", 0));
      await (signer as HttpSignerClient).close();
      // A worker with the wrong secret is refused.
      const wrong = await createRoleSigner(
        workerConfig,
        "worker",
        { ...secrets, INTERNAL_SHARED_SECRET: "w".repeat(48) },
        deps,
      );
      await expect(
        wrong!.sign({
          chain: "evm",
          network: "USDT-ERC20",
          environment: "sandbox",
          index: 0,
          transaction: {} as never,
        }),
      ).rejects.toThrow(/401/);
      expect(await createRoleSigner(parseConfig(base), "worker", secrets, deps)).toBeNull();
      expect(await createRoleSigner(workerConfig, "api", secrets, deps)).toBeNull();
      expect(await createRoleSigner(parseConfig(base), "serve", secrets, deps)).toBeInstanceOf(LocalSigner);
    } finally {
      await server.close();
      await database.close();
    }
  });
});
