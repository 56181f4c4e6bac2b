import type { QueryCreator } from "kysely";
import type { Db } from "../db/database.js";
import type { DB } from "../db/schema.js";
import type { Environment } from "../domain/environment.js";

/**
 * What a withdrawal's approvals are checked against, of a merchant: its approval thresholds in an
 * environment as stored (per currency type; a missing one means the default), and its key pairs
 * with the member each acts for (a fragment the caller joins to its approvals, in one statement).
 * Read on the caller's connection: the signer runs them on its own (issue #34 finding 1).
 */

/** The stored approval thresholds of a merchant in an environment (undefined: no settings row). */
export function findApprovalThresholds(db: Db, merchantId: string, environment: Environment) {
  return db
    .selectFrom("merchant_settings")
    .select(["auto_approve_threshold", "dual_approval_threshold"])
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirst();
}

/**
 * The key pairs of a merchant and the member each acts for (`created_by`; null: a pair issued
 * without one), as a sub-query to join: `.leftJoin(merchantKeyPairs(db, id).as("k"), …)`.
 */
export function merchantKeyPairs(db: QueryCreator<DB>, merchantId: string) {
  return db.selectFrom("api_keys").select(["id", "created_by"]).where("merchant_id", "=", merchantId);
}
