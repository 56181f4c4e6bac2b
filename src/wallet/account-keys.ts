import { type Config, ConfigError } from "../config/config.js";
import type { KeyMaterial } from "../config/key-custody.js";
import { resolveMnemonic } from "../config/mnemonic.js";
import { type AccountKeyName, type AccountXpubs, accountKeyNames } from "../config/xpubs.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AddressDeriver } from "./address-deriver.js";

export interface AccountKeys {
  deriver: AddressDeriver;
  /** Where the keys came from, for the start-up log (never the keys or words themselves). */
  source: "MASTER_XPUBS" | "MASTER_MNEMONIC" | "MASTER_MNEMONIC_FILE" | "generated";
}

/**
 * The address deriver of a process that derives addresses (`keyMaterialForRole` said `mnemonic`
 * or `xpubs`, and checked production's rules). Watch-only from `MASTER_XPUBS` when the role needs
 * no more; otherwise from the mnemonic — a signing role, or, outside production mode only, a role
 * given no xpubs (embedded defaults: the generated mnemonic). Given both, they must agree:
 * addresses derived from one and spent with the other would be addresses nobody can spend.
 */
export async function resolveAccountKeys(
  config: Config,
  need: Exclude<KeyMaterial, "none">,
): Promise<AccountKeys> {
  const xpubs = config.accountXpubs;
  if (need === "xpubs" && xpubs) {
    return { deriver: AddressDeriver.fromAccountExtendedPublicKeys(xpubs), source: "MASTER_XPUBS" };
  }
  const { mnemonic, source } = await resolveMnemonic(config);
  const deriver = AddressDeriver.fromMnemonic(mnemonic);
  if (xpubs) {
    const differ = differingAccounts(accountXpubsOf(deriver), xpubs);
    if (differ.length > 0) {
      throw new ConfigError([
        {
          variable: "MASTER_XPUBS",
          message: `does not match the mnemonic (${differ.join(", ")}): print the right line with \`stablegate signer export-xpubs\``,
        },
      ]);
    }
  }
  return { deriver, source };
}

/** The account keys a deriver derives from, in `MASTER_XPUBS`'s shape. */
export function accountXpubsOf(deriver: AddressDeriver): AccountXpubs {
  return Object.fromEntries(
    accountKeyNames().map((name) => {
      const [network, environment] = name.split("/") as [CurrencyType, Environment];
      return [name, deriver.accountExtendedPublicKey(network, environment)];
    }),
  ) as AccountXpubs;
}

/** The accounts whose keys differ between two sets. */
export function differingAccounts(a: AccountXpubs, b: Partial<AccountXpubs>): AccountKeyName[] {
  return accountKeyNames().filter((name) => b[name] !== undefined && a[name] !== b[name]);
}
