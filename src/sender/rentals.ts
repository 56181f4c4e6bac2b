import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { RentalStatus } from "../db/tables/sending.js";
import type { SenderScope } from "./transfer-store.js";

/**
 * The books of energy rented from an outside provider (issue #38, decision 21 of
 * docs/decisions/tron-resources.md; migration 0035). The energy engine asks, claims, orders and
 * closes; the sweeper asks in the transaction that queues its sweep. A row is claimed (`ordering`,
 * committed) before the provider is called, so that however many workers look and wherever one
 * dies, an order is placed at most once.
 */

/** A rental not closed yet: its receiver's transfers wait for it (the chain decides when it came). */
export const OPEN_RENTAL_STATES: readonly RentalStatus[] = ["requested", "ordering", "ordered", "unknown"];

export interface Rental {
  id: string;
  receiver: string;
  energy: bigint;
  status: RentalStatus;
  afterIntentId: string | null;
  servesIntentId: string | null;
  maxSun: bigint | null;
  reason: string | null;
  createdAt: Date;
  /** When it was claimed for ordering (null: not yet): its wait for the energy counts from here. */
  orderedAt: Date | null;
}

export interface RentalRequest {
  id: string;
  receiver: string;
  energy: bigint;
  /** The activation (top-up) the order waits for. */
  afterIntentId?: string;
  /** The transfer the energy is for: a sweep, or the oldest of the hot wallet's batch. */
  servesIntentId: string;
  /** The most the order may cost (sun): the burn it replaces. */
  maxSun: bigint;
}

const COLUMNS = [
  "id",
  "receiver",
  "energy",
  "status",
  "after_intent_id",
  "serves_intent_id",
  "max_sun",
  "reason",
  "created_at",
  "ordered_at",
] as const;

function toRental(r: {
  id: string;
  receiver: string;
  energy: string;
  status: RentalStatus;
  after_intent_id: string | null;
  serves_intent_id: string | null;
  max_sun: string | null;
  reason: string | null;
  created_at: Date;
  ordered_at: Date | null;
}): Rental {
  return {
    id: r.id,
    receiver: r.receiver,
    energy: BigInt(r.energy),
    status: r.status,
    afterIntentId: r.after_intent_id,
    servesIntentId: r.serves_intent_id,
    maxSun: r.max_sun === null ? null : BigInt(r.max_sun),
    reason: r.reason,
    createdAt: new Date(r.created_at),
    orderedAt: r.ordered_at ? new Date(r.ordered_at) : null,
  };
}

/**
 * Records a rental request unless one to the receiver is open (the partial unique index decides
 * between workers). Inside the caller's transaction. Returns whether it recorded one.
 */
export async function requestRental(
  trx: Db,
  scope: SenderScope,
  r: RentalRequest,
  now: Date,
): Promise<boolean> {
  const inserted = await trx
    .insertInto("energy_rentals")
    .values({
      id: r.id,
      network: scope.network,
      environment: scope.environment,
      receiver: r.receiver,
      energy: r.energy,
      status: "requested",
      after_intent_id: r.afterIntentId ?? null,
      serves_intent_id: r.servesIntentId,
      max_sun: r.maxSun,
      created_at: now,
    })
    .onConflict((oc) =>
      oc
        .columns(["network", "environment", "receiver"])
        .where("status", "in", OPEN_RENTAL_STATES)
        .doNothing(),
    )
    .returning("id")
    .executeTakeFirst();
  return inserted !== undefined;
}

/** The open rental to `receiver`, if any. */
export async function openRentalTo(db: Db, scope: SenderScope, receiver: string): Promise<Rental | null> {
  const row = await db
    .selectFrom("energy_rentals")
    .select(COLUMNS)
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("receiver", "=", receiver)
    .where("status", "in", OPEN_RENTAL_STATES)
    .executeTakeFirst();
  return row ? toRental(row) : null;
}

/** The rental asked for the transfer `intentId` (a sweep, or a hot-wallet batch's oldest), if any. */
export async function rentalServing(db: Db, intentId: string): Promise<Rental | null> {
  const row = await db
    .selectFrom("energy_rentals")
    .select(COLUMNS)
    .where("serves_intent_id", "=", intentId)
    .executeTakeFirst();
  return row ? toRental(row) : null;
}

/**
 * Whether a rental to `receiver` since `since` ended without the energy (refused, expired, or its
 * order's fate unknown): no other is asked for it until then; it burns or waits as before.
 */
export async function rentalFailedSince(
  db: Db,
  scope: SenderScope,
  receiver: string,
  since: Date,
): Promise<boolean> {
  const row = await db
    .selectFrom("energy_rentals")
    .select("id")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("receiver", "=", receiver)
    .where("created_at", ">=", since)
    .where("status", "in", ["refused", "expired", "unknown"])
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Requested rentals whose receiver is ready: no activation, or its activation confirmed. Those
 * whose activation failed are refused on the way (their sweep fails with the activation anyway).
 */
export async function rentalsToOrder(db: Db, scope: SenderScope, limit: number): Promise<Rental[]> {
  await db
    .updateTable("energy_rentals")
    .set({ status: "refused", reason: "its receiver's activation failed", finished_at: sql`now()` })
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("status", "=", "requested")
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom("outgoing_transfers as a")
          .select("a.intent_id")
          .whereRef("a.intent_id", "=", "energy_rentals.after_intent_id")
          .where("a.status", "=", "failed"),
      ),
    )
    .execute();
  const rows = await db
    .selectFrom("energy_rentals")
    .select(COLUMNS)
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("status", "=", "requested")
    .where(({ or, eb, exists, selectFrom }) =>
      or([
        eb("after_intent_id", "is", null),
        exists(
          selectFrom("outgoing_transfers as a")
            .select("a.intent_id")
            .whereRef("a.intent_id", "=", "energy_rentals.after_intent_id")
            .where("a.status", "=", "confirmed"),
        ),
      ]),
    )
    .orderBy("created_at")
    .limit(limit)
    .execute();
  return rows.map(toRental);
}

/**
 * Claims a requested rental for ordering (committed before the provider is called): true for the
 * one worker that gets it.
 */
export async function claimRental(db: Db, id: string, now: Date): Promise<boolean> {
  const r = await db
    .updateTable("energy_rentals")
    .set({ status: "ordering", ordered_at: now })
    .where("id", "=", id)
    .where("status", "=", "requested")
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * The provider took the order: what it charged, recorded whatever the rental's status by now (a
 * gate may have seen the energy arrive before the answer: `delivered` stays, the cost is booked).
 */
export async function markRentalOrdered(
  db: Db,
  id: string,
  o: { provider: string; serial: string; paidSun: bigint; reason: string | null },
): Promise<void> {
  await db
    .updateTable("energy_rentals")
    .set((eb) => ({
      status: eb
        .case()
        .when("status", "=", "ordering")
        .then(sql.lit<RentalStatus>("ordered"))
        .else(eb.ref("status"))
        .end(),
      provider: o.provider,
      serial: o.serial,
      paid_sun: o.paidSun,
      ...(o.reason ? { reason: o.reason } : {}),
    }))
    .where("id", "=", id)
    .where("paid_sun", "is", null)
    .execute();
}

/**
 * Closes an open rental: `delivered` (the chain shows the energy), `refused` (the provider said
 * no), `expired` (it never came within the wait), or marks it `unknown` (the order's fate is not
 * known: no answer, or a claim a crashed worker left). Only from an open state.
 */
export async function settleRental(
  db: Db,
  id: string,
  status: "delivered" | "refused" | "expired" | "unknown",
  reason: string | null,
  now: Date,
  provider?: string,
): Promise<boolean> {
  const r = await db
    .updateTable("energy_rentals")
    .set({
      status,
      reason,
      ...(status === "unknown" ? {} : { finished_at: now }),
      ...(provider ? { provider } : {}),
    })
    .where("id", "=", id)
    .where("status", "in", OPEN_RENTAL_STATES)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Claims left `ordering` since before `before` (their worker died before the answer). */
export async function staleRentalClaims(db: Db, scope: SenderScope, before: Date): Promise<string[]> {
  const rows = await db
    .selectFrom("energy_rentals")
    .select("id")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("status", "=", "ordering")
    .where("ordered_at", "<", before)
    .execute();
  return rows.map((r) => r.id);
}
