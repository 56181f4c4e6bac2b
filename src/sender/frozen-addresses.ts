import type { Db } from "../db/database.js";
import { inTransaction } from "../db/transaction.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { adjustFrozenCustody } from "../ledger/index.js";
import type { Logger } from "../observability/logger.js";

/**
 * The gateway's own addresses the token's issuer froze (README.md#frozen-funds, issue #40). A frozen
 * address can never move the token again: nothing is signed from it, nothing is swept into a frozen
 * hot wallet or out of a frozen deposit address, and `/readyz` reports the chain's sending down.
 * Recorded when a check finds it (the hot wallet and gas tank with their balances every few
 * seconds, a deposit address before its sweep); released when a later check finds it cleared.
 */
export type FrozenRole = "hot_wallet" | "gas_tank" | "cold_wallet" | "deposit";

type At = { network: CurrencyType; environment: Environment; address: string };

/**
 * Records what a check found, in one transaction under the address's row lock (several workers
 * check the same wallets). A newly frozen address is an alert (`own_address_frozen`), a release a
 * notice; a repeated answer changes nothing but the custody. The ledger follows the coins
 * (`adjustFrozenCustody`, decisions/frozen-funds.md 13): while the address is frozen its `balance`
 * is moved to the system account `frozen`, a drop is written off (the issuer destroyed it), and
 * what is left goes back to the usable custody when the freeze is lifted. The merchants' balances
 * do not change: they are still owed.
 */
export async function recordFreezeCheck(
  db: Db,
  at: At & { role: FrozenRole },
  check: { frozen: boolean; balance: bigint },
  /** When the reading was taken: before the chain was read (a reading older than the last applied is dropped). */
  now: Date,
  logger: Logger,
): Promise<void> {
  const { frozen, balance } = check;
  await inTransaction(db, async (trx) => {
    let row = await lockRow(trx, at);
    // Another worker applied a newer reading meanwhile: this one is stale (applied, it could
    // freeze again coins the newer one wrote off, and write them off twice).
    if (row?.checked_at && row.checked_at.getTime() > now.getTime()) return;
    let newlyFrozen = false;
    if (!row) {
      if (!frozen) return;
      const inserted = await trx
        .insertInto("frozen_addresses")
        .values({ ...atColumns(at), role: at.role, frozen_at: now, released_at: null })
        .onConflict((oc) => oc.columns(["network", "environment", "address"]).doNothing())
        .returning("address")
        .execute();
      newlyFrozen = inserted.length > 0;
      row = await lockRow(trx, at);
      if (!row) throw new Error(`frozen_addresses: ${at.address} missing after its insert`);
    } else if (frozen && row.released_at !== null) {
      await trx
        .updateTable("frozen_addresses")
        .set({ role: at.role, frozen_at: now, released_at: null })
        .where("network", "=", at.network)
        .where("environment", "=", at.environment)
        .where("address", "=", at.address)
        .execute();
      newlyFrozen = true;
    }
    const open = newlyFrozen || row.released_at === null;
    if (!frozen && !open) return;
    const from = BigInt(row.frozen_amount);
    const released = !frozen;
    const to = released ? 0n : balance;
    const posted = await adjustFrozenCustody(
      trx,
      { environment: at.environment, currencyType: at.network },
      { from, to: balance, released },
      (n) => `freeze:${at.network}:${at.environment}:${at.address}:${row.postings + n + 1}`,
    );
    await trx
      .updateTable("frozen_addresses")
      .set({
        frozen_amount: to,
        postings: row.postings + posted,
        checked_at: now,
        ...(released ? { released_at: now } : {}),
      })
      .where("network", "=", at.network)
      .where("environment", "=", at.environment)
      .where("address", "=", at.address)
      .execute();
    if (newlyFrozen)
      logger.error(
        { alert: "own_address_frozen", ...atColumns(at), role: at.role, balance: String(balance) },
        "the token's issuer froze one of the gateway's own addresses: nothing is sent from it or swept into it",
      );
    else if (released)
      logger.warn(atColumns(at), "an own address frozen before is no longer frozen: sending from it resumes");
    if (!released && balance < from)
      logger.error(
        { alert: "own_funds_written_off", ...atColumns(at), writtenOff: String(from - balance) },
        "coins on a frozen own address are gone (the issuer destroyed them): written off in the ledger",
      );
  });
}

const atColumns = (at: At) => ({ network: at.network, environment: at.environment, address: at.address });

function lockRow(trx: Db, at: At) {
  return trx
    .selectFrom("frozen_addresses")
    .select(["released_at", "frozen_amount", "postings", "checked_at"])
    .where("network", "=", at.network)
    .where("environment", "=", at.environment)
    .where("address", "=", at.address)
    .forUpdate()
    .executeTakeFirst();
}

/** Whether the address is recorded frozen now. */
export async function isRecordedFrozen(db: Db, at: At): Promise<boolean> {
  return (await openFreeze(db, at)) !== undefined;
}

/** The frozen own addresses of one chain (for `/readyz` and metrics). */
export async function frozenAddressesOf(
  db: Db,
  chain: { network: CurrencyType; environment: Environment },
): Promise<{ address: string; role: FrozenRole; frozenAt: Date }[]> {
  const rows = await db
    .selectFrom("frozen_addresses")
    .select(["address", "role", "frozen_at"])
    .where("network", "=", chain.network)
    .where("environment", "=", chain.environment)
    .where("released_at", "is", null)
    .orderBy("frozen_at")
    .execute();
  return rows.map((r) => ({ address: r.address, role: r.role, frozenAt: r.frozen_at }));
}

function openFreeze(db: Db, at: At) {
  return db
    .selectFrom("frozen_addresses")
    .select("role")
    .where("network", "=", at.network)
    .where("environment", "=", at.environment)
    .where("address", "=", at.address)
    .where("released_at", "is", null)
    .executeTakeFirst();
}
