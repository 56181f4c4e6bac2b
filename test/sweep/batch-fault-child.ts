/**
 * The process of the batched sweeps' fault-injection test (batch-fault-injection.test.ts): runs the
 * real Sweeper (batched EIP-7702 sweeps) and Sender against anvil and the test database until
 * nothing is left to sweep or send, and SIGKILLs itself at the `FAULT_POINT` step the first time it
 * gets there (`before-assemble`: the sweeper's, between the carried sweeps and their batch; the
 * others: the sender's).
 */
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import { openDatabase } from "../../src/db/database.js";
import { systemClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { Sender } from "../../src/sender/sender.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { registerSweepOutcomes, Sweeper } from "../../src/sweep/sweeper.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const env = process.env;
const network = "USDT-ERC20";
const database = env.FAULT_DATABASE_URL
  ? await openDatabase({ kind: "postgres", url: env.FAULT_DATABASE_URL, poolSize: 3 })
  : await openDatabase({ kind: "pglite", dataDir: env.FAULT_PGLITE_DIR! });
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const logger = createLogger("silent");
const address = (i: number) => wallet.address(network, "sandbox", i);
const writer = new EvmChainWriter({ rpcUrl: env.FAULT_RPC_URL!, tokenAddress: env.FAULT_TOKEN! });
const outcomes = new TransferOutcomes();
registerSweepOutcomes(outcomes);
const kill = (point: string, n: number) => {
  if (point !== env.FAULT_POINT || n === 0) return;
  process.stderr.write(`KILL ${point} ${n}\n`);
  process.kill(process.pid, "SIGKILL");
};
const sweeper = new Sweeper({
  db: database.db,
  network,
  environment: "sandbox",
  writer,
  address,
  threshold: 1_000_000n,
  logger,
  clock: systemClock,
  // Batches of 5 addresses (each authorised in its batch): several batches, one deployment.
  batch: { gasBudget: 500_000n },
  fault: (point, n) => kill(point, n),
});
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
  batchSize: 2,
  fault: (point, ids) => kill(point, ids.length),
});
// Start-up: everything due now (the recovery of what a previous run left).
await database.db
  .updateTable("outgoing_transfers")
  .set({ next_attempt_at: new Date(0) })
  .where("status", "in", ["queued", "signed", "broadcast"])
  .execute();
let open = 0;
for (let round = 0; round < 50; round++) {
  const queued = await sweeper.tick();
  open = await sender.drain(60_000, 5);
  if (queued === 0 && open === 0) break;
}
await database.close();
process.exit(open === 0 ? 0 : 3);
