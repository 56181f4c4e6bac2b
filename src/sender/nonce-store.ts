import type { Db } from "../db/database.js";
import type { SenderScope } from "./transfer-store.js";

/** The SQL of `sender_nonces`: the next nonce of each EVM sending address, under a row lock. */

/** Locks the sending address's nonce row in `trx` (created at 0 if missing); returns its next nonce. */
export async function lockNextNonce(trx: Db, scope: SenderScope, address: string): Promise<number> {
  await trx
    .insertInto("sender_nonces")
    .values({ network: scope.network, environment: scope.environment, address, next_nonce: 0 })
    .onConflict((oc) => oc.columns(["network", "environment", "address"]).doNothing())
    .execute();
  const row = await trx
    .selectFrom("sender_nonces")
    .select("next_nonce")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("address", "=", address)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return Number(row.next_nonce);
}

export async function saveNextNonce(
  trx: Db,
  scope: SenderScope,
  address: string,
  nonce: number,
): Promise<void> {
  await trx
    .updateTable("sender_nonces")
    .set({ next_nonce: nonce })
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("address", "=", address)
    .execute();
}
