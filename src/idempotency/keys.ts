import { type ExpressionBuilder, sql } from "kysely";
import type { Db } from "../db/database.js";
import type { DB } from "../db/schema.js";
import type { Environment } from "../domain/environment.js";

/** SQL of `Idempotency-Key` records (docs/merchants/idempotency.md): one per merchant × environment × key. */

export interface IdempotencyScope {
  merchantId: string;
  environment: Environment;
  key: string;
}

/**
 * `claimed` carries the claim's `created_at`: the fencing token of this claim. Renewal, completion
 * and release only touch the row while it still holds that token, so a request that lost its lease
 * (stalled past it while another request re-claimed the key) can neither renew, store its answer
 * nor free the key of the request that took over.
 */
export type IdempotencyClaim =
  | { kind: "claimed"; claimedAt: Date }
  | { kind: "replay"; status: number; body: string }
  | { kind: "mismatch" }
  | { kind: "in_flight" };

/**
 * Claims `key` for a request whose (method, route, body) hash is `requestHash`, in one short
 * transaction of its own: a new key (or one older than `retainedSince`, or a `running` claim not
 * renewed since `abandonedBefore` — its request died without committing, since a live request
 * renews its claim, `renewIdempotencyClaim`) becomes `running` for this request; a finished one with the same hash replays; a different hash is a mismatch; a live
 * claim is in flight. Concurrent first uses race on the primary key: exactly one claims.
 */
export async function claimIdempotencyKey(
  db: Db,
  scope: IdempotencyScope,
  requestHash: string,
  at: { now: Date; retainedSince: Date; abandonedBefore: Date },
): Promise<IdempotencyClaim> {
  const fresh = {
    merchant_id: scope.merchantId,
    environment: scope.environment,
    key: scope.key,
    request_hash: requestHash,
    state: "running" as const,
    created_at: at.now,
    locked_at: at.now,
  };
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto("idempotency_keys")
      .values(fresh)
      .onConflict((oc) => oc.doNothing())
      .returning("key")
      .executeTakeFirst();
    if (inserted) return { kind: "claimed", claimedAt: at.now };
    const row = await trx
      .selectFrom("idempotency_keys")
      .selectAll()
      .where("merchant_id", "=", scope.merchantId)
      .where("environment", "=", scope.environment)
      .where("key", "=", scope.key)
      .forUpdate()
      .executeTakeFirst();
    const expired = !row || row.created_at < at.retainedSince;
    const abandoned = row?.state === "running" && row.locked_at < at.abandonedBefore;
    if (expired || abandoned) {
      await trx
        .insertInto("idempotency_keys")
        .values(fresh)
        .onConflict((oc) =>
          oc.columns(["merchant_id", "environment", "key"]).doUpdateSet({
            request_hash: requestHash,
            state: "running",
            response_status: null,
            response_body: null,
            created_at: at.now,
            locked_at: at.now,
          }),
        )
        .execute();
      return { kind: "claimed", claimedAt: at.now };
    }
    if (row.request_hash !== requestHash) return { kind: "mismatch" };
    if (row.state === "done" && row.response_status !== null && row.response_body !== null) {
      return { kind: "replay", status: row.response_status, body: row.response_body };
    }
    return { kind: "in_flight" };
  });
}

/** The row of `scope` while it still holds this claim (running, same fencing token `claimedAt`). */
function stillClaimed(
  eb: ExpressionBuilder<DB, "idempotency_keys">,
  scope: IdempotencyScope,
  claimedAt: Date,
) {
  return eb.and([
    eb("merchant_id", "=", scope.merchantId),
    eb("environment", "=", scope.environment),
    eb("key", "=", scope.key),
    eb("state", "=", "running"),
    eb("created_at", "=", claimedAt),
  ]);
}

/**
 * Extends the lease of a running claim (its heartbeat): `locked_at` = `now`. False when the claim
 * is no longer this request's (answered, released, or re-claimed after its lease ran out).
 */
export async function renewIdempotencyClaim(
  db: Db,
  scope: IdempotencyScope,
  claimedAt: Date,
  now: Date,
): Promise<boolean> {
  const r = await db
    .updateTable("idempotency_keys")
    .set({ locked_at: now })
    .where((eb) => stillClaimed(eb, scope, claimedAt))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Stores the response of a claimed key, in the transaction of the operation it answers. False when
 * the claim is no longer this request's: the caller must then roll the operation back.
 */
export async function completeIdempotencyKey(
  trx: Db,
  scope: IdempotencyScope,
  claimedAt: Date,
  response: { status: number; body: string },
): Promise<boolean> {
  const r = await trx
    .updateTable("idempotency_keys")
    .set({ state: "done", response_status: response.status, response_body: response.body })
    .where((eb) => stillClaimed(eb, scope, claimedAt))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Frees a claim whose request failed (nothing was created): the client may retry with the key. */
export async function releaseIdempotencyKey(db: Db, scope: IdempotencyScope, claimedAt: Date): Promise<void> {
  await db
    .deleteFrom("idempotency_keys")
    .where((eb) => stillClaimed(eb, scope, claimedAt))
    .execute();
}

/** Rows one purge statement removes at most: a long backlog goes in several short transactions. */
const PURGE_BATCH = 5_000;

/**
 * Deletes records created before `olderThan` (their retention is over: a replay would claim them
 * afresh anyway), in batches by the `created_at` index; returns how many.
 */
export async function purgeIdempotencyKeys(db: Db, olderThan: Date): Promise<number> {
  let purged = 0;
  for (;;) {
    // The age is checked again on the row deleted: a key re-claimed (created_at renewed) while this
    // statement waited for its lock is a new request's, and stays.
    const r = await sql`delete from idempotency_keys where created_at < ${olderThan}
      and (merchant_id, environment, key) in (
        select merchant_id, environment, key from idempotency_keys
        where created_at < ${olderThan} order by created_at limit ${PURGE_BATCH})`.execute(db);
    const n = Number(r.numAffectedRows ?? 0n);
    purged += n;
    if (n < PURGE_BATCH) return purged;
  }
}
