import { HDKey } from "@scure/bip32";
import {
  CURRENCY_TYPES,
  type CurrencyType,
  DEFAULT_ENABLED_CURRENCY_TYPES,
  depositAccountOf,
} from "../domain/currency.js";
import { ENVIRONMENTS, type Environment } from "../domain/environment.js";

/** `"<network>/<environment>"`, e.g. `"USDT-ERC20/production"`: one BIP44 account each. */
export type AccountKeyName = `${CurrencyType}/${Environment}`;

/**
 * The accounts a process derives addresses in: each currency type in each environment — every
 * currency type the code knows, or those of `currencyTypes` (the enabled ones).
 */
export function accountKeyNames(currencyTypes: readonly CurrencyType[] = CURRENCY_TYPES): AccountKeyName[] {
  return currencyTypes.flatMap((network) =>
    ENVIRONMENTS.map((environment) => `${network}/${environment}` as const),
  );
}

/** The account extended public keys (`m/44'/<coin>'/<account>'`), one per account (the enabled ones). */
export type AccountXpubs = Readonly<Partial<Record<AccountKeyName, string>>>;

/**
 * Parses `MASTER_XPUBS`: `<network>/<environment>=<xpub>` entries separated by commas or
 * whitespace (the line `stablegate signer export-xpubs` prints), every account exactly once. Each
 * key must be a PUBLIC extended key at depth 3 (an account node): a private key here would put
 * spending power where it must not be, and a key of another depth would derive other addresses.
 * Returns the problems instead of throwing, for `parseConfig` to report with the others.
 */
export function parseAccountXpubs(
  text: string,
  enabled: readonly CurrencyType[] = DEFAULT_ENABLED_CURRENCY_TYPES,
): { xpubs: AccountXpubs } | { error: string } {
  const known = accountKeyNames();
  // The enabled currency types' accounts, and the accounts their deposit addresses come from.
  const needed = accountKeyNames(
    CURRENCY_TYPES.filter((c) => enabled.some((e) => e === c || depositAccountOf(e) === c)),
  );
  const found = new Map<string, string>();
  for (const entry of text.split(/[\s,]+/).filter(Boolean)) {
    const eq = entry.indexOf("=");
    const name = eq < 0 ? entry : entry.slice(0, eq);
    if (eq < 0 || !(known as string[]).includes(name)) {
      return {
        error: `"${eq < 0 ? "(no =)" : name}" is not an account: entries are <account>=<xpub> with accounts ${needed.join(", ")} (print them on the signer host with \`stablegate signer export-xpubs\`)`,
      };
    }
    if (found.has(name)) return { error: `${name} is given twice` };
    const problem = xpubProblem(entry.slice(eq + 1));
    if (problem) return { error: `${name}: ${problem}` };
    found.set(name, entry.slice(eq + 1));
  }
  const missing = needed.filter((n) => !found.has(n));
  if (missing.length > 0) {
    return {
      error: `missing ${missing.join(", ")} (every enabled currency type's accounts are needed; \`stablegate signer export-xpubs\` prints them all)`,
    };
  }
  return { xpubs: Object.fromEntries(found) as AccountXpubs };
}

/** The `MASTER_XPUBS` value of a set of account keys (what `parseAccountXpubs` reads back). */
export function formatAccountXpubs(xpubs: AccountXpubs): string {
  return accountKeyNames()
    .filter((name) => xpubs[name] !== undefined)
    .map((name) => `${name}=${xpubs[name]}`)
    .join(",");
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
