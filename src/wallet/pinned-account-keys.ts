import { ACCOUNT_KEY_NAMES, type AccountKeyName, type AccountXpubs } from "../config/xpubs.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * Records `xpubs` as this database's account keys where none is recorded yet (the first process
 * to start on it), and returns the accounts whose recorded key differs from `xpubs`. One statement
 * per step, safe when several processes start at once (`on conflict do nothing`, then read).
 */
export async function pinAccountKeys(db: Db, xpubs: AccountXpubs): Promise<AccountKeyName[]> {
  await db
    .insertInto("account_keys")
    .values(
      ACCOUNT_KEY_NAMES.map((name) => {
        const [network, environment] = name.split("/") as [CurrencyType, Environment];
        return { network, environment, xpub: xpubs[name] };
      }),
    )
    .onConflict((oc) => oc.columns(["network", "environment"]).doNothing())
    .execute();
  const recorded = await db.selectFrom("account_keys").select(["network", "environment", "xpub"]).execute();
  const differ = new Set(
    recorded
      .filter((r) => xpubs[`${r.network}/${r.environment}`] !== r.xpub)
      .map((r) => `${r.network}/${r.environment}`),
  );
  return ACCOUNT_KEY_NAMES.filter((name) => differ.has(name));
}
