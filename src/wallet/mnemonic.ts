import { HDKey } from "@scure/bip32";
import * as bip39 from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";

/** A new 24-word English BIP39 mnemonic (256 bits of entropy). */
export function generateMnemonic(): string {
  return bip39.generateMnemonic(wordlist, 256);
}

/** Collapses whitespace and case, which users (and files with trailing newlines) get wrong. */
export function normalizeMnemonic(mnemonic: string): string {
  return mnemonic.trim().toLowerCase().split(/\s+/).join(" ");
}

/** Valid English BIP39 mnemonic (word list and checksum), after `normalizeMnemonic`. */
export function isValidMnemonic(mnemonic: string): boolean {
  return bip39.validateMnemonic(normalizeMnemonic(mnemonic), wordlist);
}

/**
 * The BIP32 master key of a mnemonic (BIP39 seed with an optional passphrase).
 * Internal to `src/wallet`: callers use `AddressDeriver` or `PrivateKeyDeriver`.
 */
export function masterKeyFromMnemonic(mnemonic: string, passphrase = ""): HDKey {
  const normalized = normalizeMnemonic(mnemonic);
  if (!bip39.validateMnemonic(normalized, wordlist)) throw new Error("Invalid BIP39 mnemonic.");
  return HDKey.fromMasterSeed(bip39.mnemonicToSeedSync(normalized, passphrase));
}
