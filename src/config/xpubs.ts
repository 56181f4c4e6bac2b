import { HDKey } from "@scure/bip32";
import { CURRENCY_TYPES, type CurrencyType } from "../domain/currency.js";
import { ENVIRONMENTS, type Environment } from "../domain/environment.js";

/** `"<network>/<environment>"`, e.g. `"USDT-ERC20/production"`: one BIP44 account each. */
export type AccountKeyName = `${CurrencyType}/${Environment}`;

/** Every account a process derives addresses in: each network in each environment. */
export const ACCOUNT_KEY_NAMES: readonly AccountKeyName[] = CURRENCY_TYPES.flatMap((network) =>
  ENVIRONMENTS.map((environment) => `${network}/${environment}` as const),
);

/** The account extended public keys (`m/44'/<coin>'/<account>'`), one per account. */
export type AccountXpubs = Readonly<Record<AccountKeyName, string>>;

/**
 * Parses `MASTER_XPUBS`: `<network>/<environment>=<xpub>` entries separated by commas or
 * whitespace (the line `stablegate signer export-xpubs` prints), every account exactly once. Each
 * key must be a PUBLIC extended key at depth 3 (an account node): a private key here would put
 * spending power where it must not be, and a key of another depth would derive other addresses.
 * Returns the problems instead of throwing, for `parseConfig` to report with the others.
 */
export function parseAccountXpubs(text: string): { xpubs: AccountXpubs } | { error: string } {
  const found = new Map<string, string>();
  for (const entry of text.split(/[\s,]+/).filter(Boolean)) {
    const eq = entry.indexOf("=");
    const name = eq < 0 ? entry : entry.slice(0, eq);
    if (eq < 0 || !(ACCOUNT_KEY_NAMES as readonly string[]).includes(name)) {
      return {
        error: `"${eq < 0 ? "(no =)" : name}" is not an account: entries are <account>=<xpub> with accounts ${ACCOUNT_KEY_NAMES.join(", ")} (print them on the signer host with \`stablegate signer export-xpubs\`)`,
      };
    }
    if (found.has(name)) return { error: `${name} is given twice` };
    const problem = xpubProblem(entry.slice(eq + 1));
    if (problem) return { error: `${name}: ${problem}` };
    found.set(name, entry.slice(eq + 1));
  }
  const missing = ACCOUNT_KEY_NAMES.filter((n) => !found.has(n));
  if (missing.length > 0) {
    return {
      error: `missing ${missing.join(", ")} (every account is needed; \`stablegate signer export-xpubs\` prints them all)`,
    };
  }
  return { xpubs: Object.fromEntries(found) as AccountXpubs };
}

/** The `MASTER_XPUBS` value of a set of account keys (what `parseAccountXpubs` reads back). */
export function formatAccountXpubs(xpubs: AccountXpubs): string {
  return ACCOUNT_KEY_NAMES.map((name) => `${name}=${xpubs[name]}`).join(",");
}

function xpubProblem(value: string): string | undefined {
  // The key's text is never echoed: a private key pasted here by mistake must not reach a log.
  let key: HDKey;
  try {
    key = HDKey.fromExtendedKey(value);
  } catch {
    return "not a BIP32 extended key (expected xpub…)";
  }
  if (key.privateKey)
    return "an extended PRIVATE key: give the account's public key (xpub), never a private one";
  if (key.depth !== 3)
    return `an extended key at depth ${key.depth}; an account key (m/44'/coin'/account') has depth 3`;
  return undefined;
}
