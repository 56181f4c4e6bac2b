import { type AccountKeyName, type AccountXpubs, accountKeyNames } from "../config/xpubs.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * Records `xpubs` as this database's account keys where none is recorded yet (the first process
 * to start on it, or the first after a currency type was enabled), and returns the accounts whose
 * recorded key differs from `xpubs` (an account `xpubs` does not name is not compared). One statement
 * per step, safe when several processes start at once (`on conflict do nothing`, then read).
 */
export async function pinAccountKeys(db: Db, xpubs: AccountXpubs): Promise<AccountKeyName[]> {
  await db
    .insertInto("account_keys")
    .values(
      accountKeyNames().flatMap((name) => {
        const [network, environment] = name.split("/") as [CurrencyType, Environment];
        const xpub = xpubs[name];
        return xpub === undefined ? [] : [{ network, environment, xpub }];
      }),
    )
    .onConflict((oc) => oc.columns(["network", "environment"]).doNothing())
    .execute();
  const recorded = await db.selectFrom("account_keys").select(["network", "environment", "xpub"]).execute();
  const differ = new Set(
    recorded
      .filter((r) => {
        const given = xpubs[`${r.network as CurrencyType}/${r.environment as Environment}`];
        return given !== undefined && given !== r.xpub;
      })
      .map((r) => `${r.network}/${r.environment}`),
  );
  return accountKeyNames().filter((name) => differ.has(name));
}

/** The account keys this database recorded (`stablegate backup` names them in its manifest). */
export async function recordedAccountKeys(
  db: Db,
): Promise<{ network: string; environment: string; xpub: string }[]> {
  return db
    .selectFrom("account_keys")
    .select(["network", "environment", "xpub"])
    .orderBy("network")
    .orderBy("environment")
    .execute();
}
