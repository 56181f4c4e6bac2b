import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { CURRENCY_TYPES, type CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { TransactionRecord } from "../domain/transaction.js";
import { toRecord } from "./records.js";

/** One UTC day of a currency type's movement (the dashboard's overview chart). */
export interface VolumeDay {
  /** `YYYY-MM-DD`, UTC. */
  date: string;
  currencyType: CurrencyType;
  /** Credited by confirmed deposits (token base units). */
  incoming: bigint;
  /** Sent by completed withdrawals and payouts (token base units). */
  outgoing: bigint;
  count: number;
}

/**
 * The daily volume of the last `days` UTC calendar days (today included) of a merchant in an
 * environment, per currency type; days without movement are left out. Incoming: confirmed deposits
 * (what was credited); outgoing: completed withdrawals and payouts; each counted on the day it was
 * confirmed.
 */
export async function dailyVolume(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  days: number,
  now: Date,
): Promise<VolumeDay[]> {
  // From the start of the UTC day `days - 1` days ago: `days` calendar days including today.
  const since = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (days - 1)));
  const day = sql<string>`to_char(coalesce(confirmed_at, created_at) at time zone 'UTC', 'YYYY-MM-DD')`;
  const rows = await db
    .selectFrom("transactions")
    .select([
      day.as("day"),
      "currency_type",
      sql<string>`coalesce(sum(case when type = 'deposit' and status = 'confirmed'
            then coalesce(actual_balance, amount) else 0 end), 0)`.as("incoming"),
      sql<string>`coalesce(sum(case when type <> 'deposit' and status = 'completed'
            then amount else 0 end), 0)`.as("outgoing"),
      sql<string>`count(*)`.as("n"),
    ])
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment)
    .where((eb) =>
      eb.or([
        eb.and([eb("type", "=", "deposit"), eb("status", "=", "confirmed")]),
        eb.and([eb("type", "<>", "deposit"), eb("status", "=", "completed")]),
      ]),
    )
    .where(sql<boolean>`coalesce(confirmed_at, created_at) >= ${since}`)
    .groupBy([day, "currency_type"])
    .orderBy(day)
    .orderBy("currency_type")
    .execute();
  return rows
    .filter((r) => (CURRENCY_TYPES as readonly string[]).includes(r.currency_type))
    .map((r) => ({
      date: r.day,
      currencyType: r.currency_type as CurrencyType,
      incoming: BigInt(r.incoming),
      outgoing: BigInt(r.outgoing),
      count: Number(r.n),
    }));
}

/** One transaction of any merchant, for the platform admin's read-only view. */
export async function findAnyTransaction(db: Db, id: string): Promise<TransactionRecord | undefined> {
  const row = await db.selectFrom("transactions").selectAll().where("id", "=", id).executeTakeFirst();
  return row ? toRecord(row) : undefined;
}

/** The admin's `GET /api/v1/admin/transactions/{id}`: any merchant's transaction, else 404 NOT_FOUND. */
export async function getAnyTransaction(db: Db, id: string): Promise<TransactionRecord> {
  const t = await findAnyTransaction(db, id);
  if (!t) throw AppError.notFound("No such transaction.");
  return t;
}
