import type { QueryCreator } from "kysely";
import type { DB } from "../db/schema.js";

/**
 * The closed deposits (every deposit past `pending`) with their net amount and fee, as a sub-query
 * for `ledger verify` to check against their postings in one statement:
 * `from ${closedDeposits(db).as("t")} cross join lateral (…)`.
 */
export function closedDeposits(db: QueryCreator<DB>) {
  return (
    db
      .selectFrom("transactions")
      .select(["id", "net_amount", "fee"])
      .where("type", "=", "deposit")
      // Held and returned deposits were never credited (README.md#frozen-funds); a released one is
      // `confirmed` and checked like every other.
      .where("status", "not in", ["pending", "held", "returned"])
  );
}
