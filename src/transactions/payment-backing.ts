import type { Db } from "../db/database.js";

/**
 * The row behind an outgoing payment: what the signer checks an intent against (issue #34
 * finding 1: its kind, chain, state, destination and amounts), read on the caller's connection —
 * the signer runs it on its own.
 */
export function findPaymentBacking(db: Db, transactionId: string) {
  return db
    .selectFrom("transactions")
    .select([
      "id",
      "merchant_id",
      "environment",
      "type",
      "status",
      "currency_type",
      "amount",
      "fee",
      "net_amount",
      "wallet_address",
    ])
    .where("id", "=", transactionId)
    .executeTakeFirst();
}
