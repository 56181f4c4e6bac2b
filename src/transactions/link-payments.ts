import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { type LinkPayments, NO_PAYMENTS } from "../domain/payment-link.js";

/**
 * What the sessions of payment links add up to (issue #41), read from their deposit transactions
 * (`payment_link_id`, migration 0039; only a session's own transaction carries it): paid sessions
 * and what they received, and the sessions that hold a slot of `maxPayments` (open or paid). One
 * grouped statement for a page of links; on the link's row lock for the slots (links/open.ts).
 */
export async function linkPayments(db: Db, linkIds: readonly string[]): Promise<Map<string, LinkPayments>> {
  const out = new Map<string, LinkPayments>();
  if (linkIds.length === 0) return out;
  const rows = await db
    .selectFrom("transactions")
    .select([
      "payment_link_id",
      sql<string>`count(*) filter (where status = 'confirmed')`.as("payments"),
      sql<string>`coalesce(sum(actual_balance) filter (where status = 'confirmed'), 0)`.as("total_paid"),
      sql<string>`count(*) filter (where status in ('pending', 'confirmed'))`.as("reserved"),
    ])
    .where("payment_link_id", "in", [...linkIds])
    .where("type", "=", "deposit")
    .groupBy("payment_link_id")
    .execute();
  for (const id of linkIds) out.set(id, NO_PAYMENTS);
  for (const r of rows) {
    if (r.payment_link_id === null) continue;
    out.set(r.payment_link_id, {
      payments: Number(r.payments),
      totalPaid: BigInt(r.total_paid.split(".")[0] ?? "0"),
      reserved: Number(r.reserved),
    });
  }
  return out;
}
