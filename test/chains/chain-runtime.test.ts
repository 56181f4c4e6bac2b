import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { AppError } from "../../src/domain/errors.js";
import { createLogger } from "../../src/observability/logger.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";
import { type ConfirmedTransfer, DepositHandoff } from "../../src/watcher/handoff.js";
import { watcherJobs } from "../../src/watcher/jobs.js";
import { openTestDatabase } from "../support/db.js";

/** Two runtimes (an api instance and a worker instance) on one database. */
describe("chains in the runtime: registry, shared sandbox simulator, hand-off, readiness", () => {
  let dataDir: string;
  let database: Database & { url: string | undefined };
  let second: Database | null = null;
  let api: Runtime;
  let worker: Runtime;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "sg-chains-"));
    database = await openTestDatabase();
    second = database.url ? await openDatabase({ kind: "postgres", url: database.url, poolSize: 5 }) : null;
    const config = parseConfig({ NODE_ENV: "test", DATA_DIR: dataDir, LOG_LEVEL: "silent" });
    const logger = createLogger("silent");
    api = await createRuntime(config, { role: "api", database, logger });
    worker = await createRuntime(config, { role: "worker", database: second ?? database, logger });
    await database.db
      .insertInto("merchants")
      .values({ id: "mer_rt", email: "rt@example.com", company_name: "RT" })
      .execute();
  });
  afterAll(async () => {
    await api?.close();
    await worker?.close();
    await second?.close();
    await database?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("production chains without an endpoint are unavailable (503 CHAIN_UNAVAILABLE); sandbox uses the simulator", () => {
    const entry = api.chains.entry("USDT-ERC20", "production");
    expect(entry).toMatchObject({ status: "unavailable", reason: "not configured (set ERC20_RPC_URL)" });
    const err = (() => {
      try {
        api.chains.get("USDT-TRC20", "production");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("CHAIN_UNAVAILABLE");
    const sandbox = api.chains.get("USDT-TRC20", "sandbox");
    expect(sandbox).toMatchObject({ kind: "simulator", confirmations: 1 });
    expect(() => api.chains.simulator("USDT-ERC20", "production")).toThrow(AppError);
  });

  it("a sandbox payment made through one instance is seen and handed off by the watcher of another", async () => {
    const handed: ConfirmedTransfer[] = [];
    // The runtime's hand-off carries the deposit logic; this test watches the raw hand-off instead.
    const handoff = new DepositHandoff();
    handoff.register(async (_trx, t) => {
      handed.push(t);
    });
    const { address } = await database.db.transaction().execute((trx) =>
      allocateDepositAddress(trx, {
        deriver: api.addressDeriver,
        network: "USDT-TRC20",
        environment: "sandbox",
        merchantId: "mer_rt",
        purpose: "checkout",
        watchUntil: new Date(Date.now() + 3600_000),
        referenceId: "tx_session",
      }),
    );
    const paid = await api.chains.simulator("USDT-TRC20").pay(address, 25_000_000n);
    const jobs = watcherJobs(
      {
        db: (second ?? database).db,
        chains: worker.chains,
        depositHandoff: handoff,
        addressDeriver: worker.addressDeriver,
        logger: worker.logger,
        clock: worker.clock,
      },
      "worker-1",
    );
    expect(jobs.map((j) => j.name).sort()).toEqual([
      "watcher:USDT-ERC20:sandbox",
      "watcher:USDT-TRC20:sandbox",
    ]);
    const abort = new AbortController();
    for (const job of jobs) await job.run(abort.signal);
    expect(handed).toEqual([
      expect.objectContaining({
        address,
        txHash: paid.txHash,
        amount: 25_000_000n,
        blockNumber: paid.blockNumber,
        referenceId: "tx_session",
        purpose: "checkout",
      }),
    ]);
    // The api instance's view of the chain and of the watcher's progress is the same database's.
    expect(await worker.chains.get("USDT-TRC20", "sandbox").adapter.tokenBalance(address)).toBe(25_000_000n);

    const ready = Object.fromEntries(
      await Promise.all(api.readiness.map(async (c) => [c.name, await c.check()] as const)),
    );
    expect(ready["chain:USDT-TRC20:sandbox"]).toMatchObject({ status: "ok" });
    expect(ready["chain:USDT-TRC20:sandbox"]?.detail).toMatch(
      new RegExp(`head ${paid.blockNumber}, cursor ${paid.blockNumber}, lag 0 blocks`),
    );
    expect(ready["chain:USDT-ERC20:production"]).toEqual({
      status: "down",
      detail: "not configured (set ERC20_RPC_URL)",
    });
  });
});
