import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";

/** The merchant settings the deposit logic reads (issue #36: this folder owns `merchant_settings`). */

/** The merchant's underpayment tolerance (basis points) in an environment; 0 without settings. */
export async function findUnderpaymentToleranceBp(
  db: Db,
  merchantId: string,
  environment: Environment,
): Promise<number> {
  const row = await db
    .selectFrom("merchant_settings")
    .select("underpayment_tolerance_bp")
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirst();
  return row?.underpayment_tolerance_bp ?? 0;
}
