import type { Config } from "../config/config.js";
import { keyMaterialForRole } from "../config/key-custody.js";
import { formatAccountXpubs } from "../config/xpubs.js";
import { accountXpubsOf, resolveAccountKeys } from "../wallet/index.js";

/**
 * `stablegate signer export-xpubs`, run on the signer host: the `MASTER_XPUBS=…` line for the
 * api and worker hosts (docs/decisions/custody-and-faults.md#key-custody). It reads the mnemonic as the signer does — so
 * it needs it in production mode — and prints only the account PUBLIC keys: they let a process
 * derive every deposit address and the hot wallet's, and spend nothing.
 */
export async function exportAccountXpubs(config: Config): Promise<string> {
  keyMaterialForRole(config, "signer");
  const { deriver } = await resolveAccountKeys(config, "mnemonic");
  return `MASTER_XPUBS=${formatAccountXpubs(accountXpubsOf(deriver))}`;
}
