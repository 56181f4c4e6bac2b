import { sql } from "kysely";
import type { Db } from "../../db/database.js";
import { inTransaction } from "../../db/transaction.js";
import type { CurrencyType } from "../../domain/currency.js";
import type { Environment } from "../../domain/environment.js";
import { SIMULATOR_DEFINITION } from "./definition.js";

/**
 * The write-side SQL of the simulated chain (`sim_chains`, `sim_blocks`, `sim_transactions`):
 * creating a chain, locking its row for a write, sealing a block. `SimulatedChain` decides what is
 * mined; this file only stores it.
 */

/** Which chain: one per (network, environment). */
export interface SimChainKey {
  network: CurrencyType;
  environment: Environment;
}

/** The locked chain row while a write runs: head, fork counter (reorgs) and transaction nonce. */
export interface SimChainState {
  head: number;
  fork: number;
  nonce: number;
}

/** A transaction to seal into the next block. */
export interface SimSealedTransaction {
  txHash: string;
  from: string;
  to: string;
  amount: bigint;
  status: "success" | "failed";
  failureReason?: string;
}

/** The new block's hash from its content, and its timestamp (ms). */
export interface SealParams {
  hash(content: string): string;
  now(): number;
}

/** Creates the chain row and its genesis block 0 when absent. Idempotent (`on conflict do nothing`). */
export async function createSimChain(
  db: Db,
  key: SimChainKey,
  genesis: { hash: string; parentHash: string },
): Promise<void> {
  await db
    .insertInto("sim_chains")
    .values({ network: key.network, environment: key.environment, head: 0 })
    .onConflict((oc) => oc.columns(["network", "environment"]).doNothing())
    .execute();
  await db
    .insertInto("sim_blocks")
    .values({
      network: key.network,
      environment: key.environment,
      number: 0,
      hash: genesis.hash,
      parent_hash: genesis.parentHash,
      mined_at: new Date(0),
    })
    .onConflict((oc) => oc.columns(["network", "environment", "number"]).doNothing())
    .execute();
}

/**
 * Runs `fn` with the chain row locked (`select … for update`) in `db`'s transaction, or a new one
 * when `db` is not a transaction, and stores the state `fn` leaves.
 */
export async function withLockedSimChain<T>(
  db: Db,
  key: SimChainKey,
  fn: (trx: Db, chain: SimChainState) => Promise<T>,
): Promise<T> {
  const run = async (trx: Db) => {
    const row = await trx
      .selectFrom("sim_chains")
      .select(["head", "fork", "nonce"])
      .where("network", "=", key.network)
      .where("environment", "=", key.environment)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const chain = { head: Number(row.head), fork: row.fork, nonce: Number(row.nonce) };
    const out = await fn(trx, chain);
    await trx
      .updateTable("sim_chains")
      .set({ head: chain.head, fork: chain.fork, nonce: chain.nonce })
      .where("network", "=", key.network)
      .where("environment", "=", key.environment)
      .execute();
    return out;
  };
  return inTransaction(db, run);
}

/** Seals block `head + 1` (with `tx` or empty) on top of the current head; the caller holds the lock. */
export async function sealSimBlock(
  trx: Db,
  key: SimChainKey,
  chain: { head: number; fork: number },
  tx: SimSealedTransaction | null,
  params: SealParams,
): Promise<{ number: number; hash: string; parentHash: string; timestamp: number }> {
  const number = chain.head + 1;
  const parent = await trx
    .selectFrom("sim_blocks")
    .select("hash")
    .where("network", "=", key.network)
    .where("environment", "=", key.environment)
    .where("number", "=", chain.head)
    .executeTakeFirstOrThrow();
  const hash = params.hash(`block|${chain.fork}|${number}|${parent.hash}|${tx?.txHash ?? ""}`);
  const timestamp = params.now();
  // Announce the block when the mining transaction commits: the watcher of any process wakes at
  // once instead of waiting for its next poll (a sandbox payment lands in moments: docs/merchants/sandbox.md).
  await sql`select pg_notify(${SIMULATOR_DEFINITION.blockChannel}, ${`${key.network}/${key.environment}`})`.execute(
    trx,
  );
  await trx
    .insertInto("sim_blocks")
    .values({
      network: key.network,
      environment: key.environment,
      number,
      hash,
      parent_hash: parent.hash,
      mined_at: new Date(timestamp),
    })
    .execute();
  if (tx) {
    await trx
      .insertInto("sim_transactions")
      .values({
        network: key.network,
        environment: key.environment,
        tx_hash: tx.txHash,
        block_number: number,
        log_index: tx.status === "success" ? 0 : null,
        from_address: tx.from,
        to_address: tx.to,
        amount: tx.amount,
        status: tx.status,
        failure_reason: tx.failureReason ?? null,
      })
      .execute();
  }
  chain.head = number;
  return { number, hash, parentHash: parent.hash, timestamp };
}
