import { sql } from "kysely";
import type { BlockHeader, TokenTransfer } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { newId } from "../domain/ids.js";
import type { Clock } from "../lib/clock.js";

/**
 * The watcher store: every statement of the chain watcher, on `chain_cursors` (lease, cursor, head,
 * chain time, last error), `chain_blocks` (kept hashes for reorg detection), `chain_observations`
 * (stored transfers and their hand-off) and `watched_addresses` (matching). The scanning loop
 * (`watcher.ts`) decides; these functions only read and write, always for one (network,
 * environment) and, where the cursor moves, only while `owner` holds the lease.
 */
export interface WatcherScope {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  /** Lease owner id: the worker instance. */
  owner: string;
  /** Lease lifetime; renewed by every committed step. */
  leaseMs: number;
  clock: Clock;
}

/** A matched transfer with its block's timestamp (ms). */
export type TimedTransfer = TokenTransfer & { blockTime: number };

/** Records the last failure for `/readyz`; never throws. */
export async function recordError(s: WatcherScope, message: string): Promise<void> {
  await s.db
    .updateTable("chain_cursors")
    .set({ last_error: message.slice(0, 500), last_error_at: new Date(s.clock.now()) })
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .execute()
    .catch(() => {});
}

/** Takes or renews the lease if it is free, ours or expired. False also when there is no cursor row yet. */
export async function takeLease(s: WatcherScope): Promise<boolean> {
  const row = await s.db
    .updateTable("chain_cursors")
    .set({
      lease_owner: s.owner,
      lease_until: sql`now() + ${`${s.leaseMs} milliseconds`}::interval`,
    })
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .where((eb) =>
      eb.or([
        eb("lease_owner", "is", null),
        eb("lease_owner", "=", s.owner),
        eb("lease_until", "<", sql<Date>`now()`),
      ]),
    )
    .returning("cursor_block")
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether the chain has a cursor row (it has been scanned before). */
export async function cursorExists(s: WatcherScope): Promise<boolean> {
  const exists = await s.db
    .selectFrom("chain_cursors")
    .select("cursor_block")
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .executeTakeFirst();
  return exists !== undefined;
}

/** Creates the cursor row of a chain scanned for the first time (a concurrent creation wins). */
export async function createCursor(s: WatcherScope, start: number): Promise<void> {
  await s.db
    .insertInto("chain_cursors")
    .values({ network: s.network, environment: s.environment, cursor_block: start })
    .onConflict((oc) => oc.columns(["network", "environment"]).doNothing())
    .execute();
}

/** When the oldest address of this chain still matched at `cutoff` was handed out (null: none). */
export async function oldestWatchedAt(s: WatcherScope, cutoff: Date): Promise<Date | null> {
  const row = await s.db
    .selectFrom("watched_addresses")
    .select((eb) => eb.fn.min("created_at").as("oldest"))
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .where((eb) => eb.or([eb("watch_until", "is", null), eb("watch_until", ">", cutoff)]))
    .executeTakeFirst();
  const oldest = row?.oldest as Date | string | null | undefined;
  return oldest ? new Date(oldest) : null;
}

/** Gives the lease up if `owner` holds it. */
export async function releaseLease(s: WatcherScope): Promise<void> {
  await s.db
    .updateTable("chain_cursors")
    .set({ lease_owner: null, lease_until: null })
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .where("lease_owner", "=", s.owner)
    .execute();
}

/** The block the chain has been scanned to. */
export async function readCursor(s: WatcherScope): Promise<number> {
  const row = await s.db
    .selectFrom("chain_cursors")
    .select("cursor_block")
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .executeTakeFirstOrThrow();
  return Number(row.cursor_block);
}

/** After a scan: the head and safe block seen now, and no error. */
export async function recordHead(s: WatcherScope, head: number, safe: number): Promise<void> {
  await s.db
    .updateTable("chain_cursors")
    .set({
      head_block: head,
      safe_block: safe,
      head_seen_at: new Date(s.clock.now()),
      last_error: null,
      last_error_at: null,
    })
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .where("lease_owner", "=", s.owner)
    .execute();
}

/**
 * Which of `recipients` are watched (matched until `watch_until` + grace, measured against
 * `cutoff`), with the derivation index recorded for each: ONE indexed query (`address = any($1)`
 * on the primary key).
 */
export async function watchedAmong(
  s: WatcherScope,
  recipients: string[],
  cutoff: Date,
): Promise<{ address: string; index: number }[]> {
  const rows = await s.db
    .selectFrom("watched_addresses")
    .select(["address", "derivation_index"])
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .where("address", "=", sql<string>`any(${sql.val(recipients)}::text[])`)
    .where((eb) => eb.or([eb("watch_until", "is", null), eb("watch_until", ">", cutoff)]))
    .execute();
  return rows.map((r) => ({ address: r.address, index: Number(r.derivation_index) }));
}

/**
 * Stores one scanned range atomically: observations (idempotent), block hashes, the new cursor
 * and the chain time (the timestamp of the range's last block).
 * Returns false (and writes nothing) when `owner` no longer holds the lease or the cursor
 * moved under it.
 */
export async function commitRange(
  s: WatcherScope,
  range: { from: number; to: number; end: BlockHeader; matched: TimedTransfer[]; keepBlocks: number },
): Promise<boolean> {
  const { from, to, end, matched, keepBlocks } = range;
  return s.db.transaction().execute(async (trx) => {
    const moved = await trx
      .updateTable("chain_cursors")
      .set({
        cursor_block: to,
        chain_time: new Date(end.timestamp),
        lease_until: sql`now() + ${`${s.leaseMs} milliseconds`}::interval`,
        updated_at: sql`now()`,
      })
      .where("network", "=", s.network)
      .where("environment", "=", s.environment)
      .where("lease_owner", "=", s.owner)
      .where("cursor_block", "=", from - 1)
      .returning("cursor_block")
      .executeTakeFirst();
    if (!moved) return false;
    const blocks = new Map<number, string>([[to, end.hash]]);
    if (matched.length > 0) {
      await insertObservations(trx, s, matched).execute();
      for (const t of matched) {
        blocks.set(t.blockNumber, t.blockHash);
        // A transfer that was reorganised away after its hand-off and came back in the new fork:
        // its deposit stands; record where it lives now.
        await trx
          .updateTable("chain_observations")
          .set({
            status: "handed_off",
            block_number: t.blockNumber,
            block_hash: t.blockHash,
            block_time: new Date(t.blockTime),
          })
          .where("network", "=", s.network)
          .where("tx_hash", "=", t.txHash)
          .where("log_index", "=", t.logIndex)
          .where("status", "=", "reorged")
          .execute();
      }
    }
    await trx
      .insertInto("chain_blocks")
      .values(
        [...blocks].map(([number, hash]) => ({
          network: s.network,
          environment: s.environment,
          number,
          hash,
        })),
      )
      .onConflict((oc) =>
        oc.columns(["network", "environment", "number"]).doUpdateSet({ hash: sql`excluded.hash` }),
      )
      .execute();
    await trx
      .deleteFrom("chain_blocks")
      .where("network", "=", s.network)
      .where("environment", "=", s.environment)
      .where("number", "<", to - keepBlocks)
      .execute();
    return true;
  });
}

/** The kept hash of block `n`, if any. */
export async function keptHash(s: WatcherScope, n: number): Promise<string | null> {
  const row = await s.db
    .selectFrom("chain_blocks")
    .select("hash")
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .where("number", "=", n)
    .executeTakeFirst();
  return row?.hash ?? null;
}

/** The kept block hashes below `changed`, newest first. */
export async function keptBlocksBelow(s: WatcherScope, changed: number) {
  return s.db
    .selectFrom("chain_blocks")
    .select(["number", "hash"])
    .where("network", "=", s.network)
    .where("environment", "=", s.environment)
    .where("number", "<", changed)
    .orderBy("number", "desc")
    .execute();
}

/**
 * Rolls the cursor back to `target` (chain time unknown until the new fork is scanned again:
 * nothing expires meanwhile), deletes the unconfirmed observations and kept hashes above it, and
 * marks handed-off observations above it `reorged`; returns those. Throws when `owner` lost the lease.
 */
export async function rollBackTo(
  s: WatcherScope,
  target: number,
): Promise<{ id: string; tx_hash: string }[]> {
  return s.db.transaction().execute(async (trx) => {
    const moved = await trx
      .updateTable("chain_cursors")
      // Chain time is unknown until the new fork is scanned again: nothing expires meanwhile.
      .set({ cursor_block: target, chain_time: null, updated_at: sql`now()` })
      .where("network", "=", s.network)
      .where("environment", "=", s.environment)
      .where("lease_owner", "=", s.owner)
      .returning("cursor_block")
      .executeTakeFirst();
    if (!moved) throw new Error("lost the watcher lease during a reorg roll-back");
    await trx
      .deleteFrom("chain_observations")
      .where("network", "=", s.network)
      .where("environment", "=", s.environment)
      .where("status", "=", "observed")
      .where("block_number", ">", target)
      .execute();
    const reorged = await trx
      .updateTable("chain_observations")
      .set({ status: "reorged" })
      .where("network", "=", s.network)
      .where("environment", "=", s.environment)
      .where("status", "=", "handed_off")
      .where("block_number", ">", target)
      .returning(["id", "tx_hash"])
      .execute();
    await trx
      .deleteFrom("chain_blocks")
      .where("network", "=", s.network)
      .where("environment", "=", s.environment)
      .where("number", ">", target)
      .execute();
    return reorged;
  });
}

/**
 * The hand-off batch: observations with the required confirmations (block <= `safe`) that are due
 * (`next_attempt_at`), with their watched address's owner, oldest first, at most `limit`.
 */
export async function dueObservations(s: WatcherScope, safe: number, now: Date, limit: number) {
  return s.db
    .selectFrom("chain_observations as o")
    .innerJoin("watched_addresses as w", (j) =>
      j
        .onRef("w.network", "=", "o.network")
        .onRef("w.environment", "=", "o.environment")
        .onRef("w.address", "=", "o.address"),
    )
    .select([
      "o.id",
      "o.address",
      "o.from_address",
      "o.tx_hash",
      "o.log_index",
      "o.block_number",
      "o.block_hash",
      "o.amount",
      "o.block_time",
      "o.observed_at",
      "o.attempts",
      "w.merchant_id",
      "w.purpose",
      "w.reference_id",
      "w.wrong_network",
    ])
    .where("o.network", "=", s.network)
    .where("o.environment", "=", s.environment)
    .where("o.status", "=", "observed")
    .where("o.block_number", "<=", safe)
    .where((eb) => eb.or([eb("o.next_attempt_at", "is", null), eb("o.next_attempt_at", "<=", now)]))
    .orderBy("o.block_number")
    .orderBy("o.log_index")
    .limit(limit)
    .execute();
}

/**
 * In one transaction: claims observation `id` (`observed` → `handed_off`, one more attempt) and runs
 * `handle` in that transaction. False when it was claimed by someone else already.
 */
export async function claimAndHandOff(
  s: WatcherScope,
  id: string,
  handle: (trx: Db) => Promise<void>,
): Promise<boolean> {
  return s.db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable("chain_observations")
      .set({ status: "handed_off", handed_off_at: new Date(s.clock.now()), last_error: null })
      .set((eb) => ({ attempts: eb("attempts", "+", 1) }))
      .where("id", "=", id)
      .where("status", "=", "observed")
      .returning("id")
      .executeTakeFirst();
    if (!claimed) return false; // someone else (a previous owner of the lease) did it
    await handle(trx);
    return true;
  });
}

/** A failed hand-off: the error, the attempts, and when to offer it again. */
export async function recordHandOffFailure(
  s: WatcherScope,
  id: string,
  failure: { attempts: number; error: string; nextAttemptAt: Date },
): Promise<void> {
  await s.db
    .updateTable("chain_observations")
    .set({
      attempts: failure.attempts,
      last_error: failure.error.slice(0, 500),
      next_attempt_at: failure.nextAttemptAt,
    })
    .where("id", "=", id)
    .where("status", "=", "observed")
    .execute();
}

/**
 * Stores transfers a rescan found (issue #22), idempotently: one already stored (by the watcher or
 * an earlier rescan) is left as it is. Returns how many were new. The watcher's hand-off picks the
 * new ones up once they have their confirmations, as it does its own.
 */
export async function recordObservations(s: WatcherScope, matched: TimedTransfer[]): Promise<number> {
  if (matched.length === 0) return 0;
  const rows = await insertObservations(s.db, s, matched).returning("id").execute();
  return rows.length;
}

/** The one insert of matched transfers: idempotent on (network, tx hash, log index). */
function insertObservations(db: Db, s: WatcherScope, matched: TimedTransfer[]) {
  return db
    .insertInto("chain_observations")
    .values(
      matched.map((t) => ({
        id: newId("obs"),
        network: s.network,
        environment: s.environment,
        address: t.to,
        from_address: t.from,
        tx_hash: t.txHash,
        log_index: t.logIndex,
        block_number: t.blockNumber,
        block_hash: t.blockHash,
        block_time: new Date(t.blockTime),
        amount: t.amount,
        dust: t.dust ?? 0n,
      })),
    )
    .onConflict((oc) => oc.columns(["network", "tx_hash", "log_index"]).doNothing());
}
