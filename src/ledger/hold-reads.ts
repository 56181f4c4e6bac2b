import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * Reads of a withdrawal's or payout's ledger hold (issue #34 finding 1): what its `hold` posting
 * put on the merchant's `held` account, and whether a `hold-close` posting closed it since. Plain
 * reads on the caller's connection (the signer runs them on its own, as evidence it reads itself).
 */

/** The hold posting of `transactionId` (what it put on the merchant's held account) and whether it was closed. */
export async function holdState(
  db: Db,
  transactionId: string,
  merchantId: string,
  environment: Environment,
  network: CurrencyType,
): Promise<{ held: bigint; closed: boolean }> {
  const held = await db
    .selectFrom("ledger_postings as p")
    .innerJoin("ledger_entries as e", "e.posting_id", "p.id")
    .innerJoin("ledger_accounts as a", "a.id", "e.account_id")
    .select((eb) => eb.fn.sum<string | null>("e.amount").as("total"))
    .where("p.business_key", "=", `hold:${transactionId}`)
    .where("p.kind", "=", "hold")
    .where("p.transaction_id", "=", transactionId)
    .where("a.owner", "=", merchantId)
    .where("a.environment", "=", environment)
    .where("a.currency_type", "=", network)
    .where("a.kind", "=", "held")
    .executeTakeFirst();
  const closed = await db
    .selectFrom("ledger_postings")
    .select("id")
    .where("business_key", "=", `hold-close:${transactionId}`)
    .limit(1)
    .executeTakeFirst();
  return { held: BigInt(held?.total ?? 0), closed: closed !== undefined };
}
