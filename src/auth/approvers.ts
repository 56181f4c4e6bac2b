import type { QueryCreator } from "kysely";
import type { Db } from "../db/database.js";
import type { DB } from "../db/schema.js";

/**
 * The members behind a withdrawal's approvals (issue #21, four-eyes; issue #34): who of a merchant
 * is a member now, with which role (a sub-query the caller joins to its approvals, in one
 * statement), and its owner (whom the API-key channel of a pair acting for no member counts as).
 * Read on the caller's connection: the signer runs them on its own (issue #34 finding 1).
 */

/**
 * The members of a merchant now (not removed), each with its role, as a sub-query to join:
 * `.leftJoin(currentMembers(db, id).as("u"), …)`.
 */
export function currentMembers(db: QueryCreator<DB>, merchantId: string) {
  return db
    .selectFrom("dashboard_users")
    .select(["id", "member_role"])
    .where("merchant_id", "=", merchantId)
    .where("removed_at", "is", null);
}

/** The id of the merchant's owner now (not removed), if it has one. */
export async function findMerchantOwnerId(db: Db, merchantId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom("dashboard_users")
    .select("id")
    .where("merchant_id", "=", merchantId)
    .where("member_role", "=", "owner")
    .where("removed_at", "is", null)
    .executeTakeFirst();
  return row?.id;
}
