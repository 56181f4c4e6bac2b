import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";

/** SQL of `Idempotency-Key` records (CONTRACT §4): one per merchant × environment × key. */

export interface IdempotencyScope {
  merchantId: string;
  environment: Environment;
  key: string;
}

export type IdempotencyClaim =
  | { kind: "claimed" }
  | { kind: "replay"; status: number; body: string }
  | { kind: "mismatch" }
  | { kind: "in_flight" };

/**
 * Claims `key` for a request whose (method, route, body) hash is `requestHash`, in one short
 * transaction of its own: a new key (or one older than `retainedSince`, or a `running` claim not
 * renewed since `abandonedBefore` — its request died without committing) becomes `running` for
 * this request; a finished one with the same hash replays; a different hash is a mismatch; a live
 * claim is in flight. Concurrent first uses race on the primary key: exactly one claims.
 */
export async function claimIdempotencyKey(
  db: Db,
  scope: IdempotencyScope,
  requestHash: string,
  at: { now: Date; retainedSince: Date; abandonedBefore: Date },
): Promise<IdempotencyClaim> {
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto("idempotency_keys")
      .values({
        merchant_id: scope.merchantId,
        environment: scope.environment,
        key: scope.key,
        request_hash: requestHash,
        state: "running",
        created_at: at.now,
        locked_at: at.now,
      })
      .onConflict((oc) => oc.doNothing())
      .returning("key")
      .executeTakeFirst();
    if (inserted) return { kind: "claimed" };
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
        .values({
          merchant_id: scope.merchantId,
          environment: scope.environment,
          key: scope.key,
          request_hash: requestHash,
          state: "running",
          created_at: at.now,
          locked_at: at.now,
        })
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
      return { kind: "claimed" };
    }
    if (row.request_hash !== requestHash) return { kind: "mismatch" };
    if (row.state === "done" && row.response_status !== null && row.response_body !== null) {
      return { kind: "replay", status: row.response_status, body: row.response_body };
    }
    return { kind: "in_flight" };
  });
}

/** Stores the response of a claimed key, in the transaction of the operation it answers. */
export async function completeIdempotencyKey(
  trx: Db,
  scope: IdempotencyScope,
  response: { status: number; body: string },
): Promise<void> {
  await trx
    .updateTable("idempotency_keys")
    .set({ state: "done", response_status: response.status, response_body: response.body })
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment)
    .where("key", "=", scope.key)
    .execute();
}

/** Frees a claim whose request failed (nothing was created): the client may retry with the key. */
export async function releaseIdempotencyKey(db: Db, scope: IdempotencyScope): Promise<void> {
  await db
    .deleteFrom("idempotency_keys")
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment)
    .where("key", "=", scope.key)
    .where("state", "=", "running")
    .execute();
}

/** Deletes records past their retention; returns how many. */
export async function purgeIdempotencyKeys(db: Db, olderThan: Date): Promise<number> {
  const r = await db.deleteFrom("idempotency_keys").where("created_at", "<", olderThan).executeTakeFirst();
  return Number(r.numDeletedRows ?? 0n);
}
