/**
 * The sending process of the energy engine's fault-injection test (fault-injection.test.ts): runs
 * the real Sender (with the energy gate) and the engine's rounds against the TRON emulator and the
 * test database until nothing is open and the engine queues nothing, and SIGKILLs itself at the
 * `FAULT_POINT` step the `FAULT_AT`-th time it gets there.
 */
import { sql } from "kysely";
import { TronChainWriter } from "../../src/chains/tron/tron-writer.js";
import { openDatabase } from "../../src/db/database.js";
import { EnergyEngine } from "../../src/energy/index.js";
import { systemClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { Sender } from "../../src/sender/sender.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const env = process.env;
const network = "USDT-TRC20";
const database = env.FAULT_DATABASE_URL
  ? await openDatabase({ kind: "postgres", url: env.FAULT_DATABASE_URL, poolSize: 3 })
  : await openDatabase({ kind: "pglite", dataDir: env.FAULT_PGLITE_DIR! });
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const logger = createLogger("silent");
const address = (i: number) => wallet.address(network, "sandbox", i);
const writer = new TronChainWriter({ apiUrl: env.FAULT_TRON_URL!, tokenAddress: env.FAULT_TOKEN! });
const outcomes = new TransferOutcomes();
const record = async (
  trx: Parameters<Parameters<typeof outcomes.register>[1]>[0],
  o: { intentId: string; status: string; txHash: string | null },
) => {
  await sql`insert into fault_outcomes (intent_id, status, tx_hash) values (${o.intentId}, ${o.status}, ${o.txHash})`.execute(
    trx,
  );
};
for (const kind of [
  "sweep",
  "gas_topup",
  "resource_delegation",
  "resource_reclaim",
  "resource_stake",
] as const)
  outcomes.register(kind, record);
const engine = new EnergyEngine({
  db: database.db,
  network,
  environment: "sandbox",
  writer,
  address,
  policy: { maxWaitMs: 3_600_000, burnCeilingSun: 1n, reserveSun: 10_000_000n, bandwidthStakePercent: 6 },
  logger,
  clock: systemClock,
});
let hits = 0;
const sender = new Sender({
  db: database.db,
  network,
  environment: "sandbox",
  writer,
  signer: LocalSigner.fromMnemonic(MNEMONIC, {
    db: database.db,
    logger,
    tokenContract: () => env.FAULT_TOKEN,
  }),
  address,
  outcomes,
  confirmations: 1,
  logger,
  clock: systemClock,
  recheckMs: 0,
  batchSize: 5,
  energy: engine,
  fault: (point, ids) => {
    if (point !== env.FAULT_POINT || ids.length === 0) return;
    hits++;
    if (hits === Number(env.FAULT_AT ?? 1)) {
      process.stderr.write(`KILL ${point} ${ids.length}\n`);
      process.kill(process.pid, "SIGKILL");
    }
  },
});
// Start-up: everything due now (the recovery of what a previous run left).
await database.db
  .updateTable("outgoing_transfers")
  .set({ next_attempt_at: new Date(0) })
  .where("status", "in", ["queued", "signed", "broadcast"])
  .execute();
let open = 0;
for (let round = 0; round < 50; round++) {
  open = await sender.drain(60_000, 5);
  if (!(await engine.tick()) && open === 0) break;
}
await database.close();
process.exit(open === 0 ? 0 : 3);
