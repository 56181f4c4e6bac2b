import { afterAll, beforeAll, expect, it } from "vitest";
import { buildChainRegistry, ChainRegistry } from "../../src/chains/registry.js";
import { parseConfig } from "../../src/config/config.js";
import type { Database } from "../../src/db/database.js";
import { systemClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";
import { type ConfirmedTransfer, DepositHandoff } from "../../src/watcher/handoff.js";
import { watcherJobs } from "../../src/watcher/jobs.js";
import { openTestDatabase } from "../support/db.js";
import { waitFor } from "../webhooks/support.js";

// A mined simulator block is announced by NOTIFY at commit: the watcher wakes at once, even with a
// poll interval far longer than the test. Without LISTEN the same payment waits for the poll.
let database: Database;
const deriver = AddressDeriver.fromMnemonic("test test test test test test test test test test test junk");

beforeAll(async () => {
  database = await openTestDatabase();
  await database.db
    .insertInto("merchants")
    .values({ id: "mer_sn", email: "sn@example.com", company_name: "SN" })
    .execute();
});
afterAll(async () => {
  await database?.close();
});

async function watchWith(listen: boolean) {
  const config = parseConfig({ NODE_ENV: "test", DATA_DIR: "/tmp/unused-sim-notify", LOG_LEVEL: "silent" });
  const base = buildChainRegistry(config, { db: database.db, clock: systemClock });
  const trc = base.get("USDT-TRC20", "sandbox");
  // Only the TRC20 sandbox chain, polled once a minute.
  const chains = new ChainRegistry([{ ...trc, scan: { ...trc.scan, pollIntervalMs: 60_000 } }]);
  const handed: ConfirmedTransfer[] = [];
  const handoff = new DepositHandoff();
  handoff.register(async (_trx, t) => {
    handed.push(t);
  });
  const [job] = watcherJobs(
    {
      db: database.db,
      chains,
      depositHandoff: handoff,
      addressDeriver: deriver,
      logger: createLogger("silent"),
      clock: systemClock,
      listen: listen ? database.listen?.bind(database) : undefined,
    },
    `w-${listen}`,
  );
  if (!job) throw new Error("no watcher job");
  const abort = new AbortController();
  const running = job.run(abort.signal);
  return { chain: trc, handed, running, stop: () => abort.abort() };
}

it("wakes the simulator watcher on the mined block, not on its 60 s poll", async () => {
  const w = await watchWith(true);
  try {
    await new Promise((r) => setTimeout(r, 300)); // its first scan and LISTEN are done
    const { address } = await database.db.transaction().execute((trx) =>
      allocateDepositAddress(trx, {
        deriver,
        network: "USDT-TRC20",
        environment: "sandbox",
        merchantId: "mer_sn",
        purpose: "wallet",
        referenceId: "wal_sn",
      }),
    );
    const paid = await w.chain.simulator?.pay(address, 7_000_000n);
    const got = await waitFor(() => w.handed.find((t) => t.txHash === paid?.txHash), 10_000);
    expect(got.amount).toBe(7_000_000n);
  } finally {
    w.stop();
    await w.running;
  }
});

it("without LISTEN the payment waits for the poll (the notification is what made it fast)", async () => {
  const w = await watchWith(false);
  try {
    await new Promise((r) => setTimeout(r, 300));
    const { address } = await database.db.transaction().execute((trx) =>
      allocateDepositAddress(trx, {
        deriver,
        network: "USDT-TRC20",
        environment: "sandbox",
        merchantId: "mer_sn",
        purpose: "wallet",
        referenceId: "wal_sn2",
      }),
    );
    await w.chain.simulator?.pay(address, 3_000_000n);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(w.handed.filter((t) => t.address === address)).toHaveLength(0);
  } finally {
    w.stop();
    await w.running;
  }
});
