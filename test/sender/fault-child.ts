/**
 * The sending process of the fault-injection test (test/sender/fault-injection.test.ts): runs the
 * real Sender against anvil and the test database until nothing is open, and SIGKILLs itself at
 * the `FAULT_POINT` step the `FAULT_AT`-th time it gets there.
 */
import { sql } from "kysely";
import { EvmChainWriter } from "../../src/chains/evm/evm-writer.js";
import { openDatabase } from "../../src/db/database.js";
import { systemClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { TransferOutcomes } from "../../src/sender/outcomes.js";
import { Sender } from "../../src/sender/sender.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const env = process.env;
const database = env.FAULT_DATABASE_URL
  ? await openDatabase({ kind: "postgres", url: env.FAULT_DATABASE_URL, poolSize: 3 })
  : await openDatabase({ kind: "pglite", dataDir: env.FAULT_PGLITE_DIR! });
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const outcomes = new TransferOutcomes();
const record = async (
  trx: Parameters<Parameters<typeof outcomes.register>[1]>[0],
  o: { intentId: string; status: string; txHash: string | null },
) => {
  await sql`insert into fault_outcomes (intent_id, status, tx_hash) values (${o.intentId}, ${o.status}, ${o.txHash})`.execute(
    trx,
  );
};
outcomes.register("withdrawal", record);
// Issue #22: the hot wallet's excess forwarded to the cold wallet, carried by the same sender.
outcomes.register("cold_forward", record);
let hits = 0;
const sender = new Sender({
  db: database.db,
  network: "USDT-ERC20",
  environment: "sandbox",
  writer: new EvmChainWriter({ rpcUrl: env.FAULT_RPC_URL!, tokenAddress: env.FAULT_TOKEN! }),
  signer: LocalSigner.fromMnemonic(MNEMONIC, {
    db: database.db,
    logger: createLogger("silent"),
    tokenContract: () => env.FAULT_TOKEN,
    coldWallet: () => env.FAULT_COLD,
  }),
  address: (i) => wallet.address("USDT-ERC20", "sandbox", i),
  outcomes,
  confirmations: 1,
  logger: createLogger("silent"),
  clock: systemClock,
  recheckMs: 0,
  batchSize: Number(env.FAULT_BATCH ?? 8),
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
const open = await sender.drain(60_000, 5);
await database.close();
process.exit(open === 0 ? 0 : 3);
