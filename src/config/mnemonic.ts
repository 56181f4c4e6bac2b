import path from "node:path";
import * as bip39 from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { ensurePrivateDir, readKeyFile, UnsafeFileError, writeKeyFile } from "../lib/private-files.js";
import { type Config, ConfigError } from "./config.js";

/** Where a development mnemonic is generated when none is configured (outside production). */
export function generatedMnemonicPath(dataDir: string): string {
  return path.join(dataDir, "master-mnemonic");
}

export interface ResolvedMnemonic {
  mnemonic: string;
  /** Where it came from, for the start-up log (never the words themselves). */
  source: "MASTER_MNEMONIC" | "MASTER_MNEMONIC_FILE" | "generated";
}

/**
 * The master BIP39 mnemonic (docs/decisions/custody-and-faults.md#key-custody): `MASTER_MNEMONIC`, else the file named by
 * `MASTER_MNEMONIC_FILE`, else — outside production mode only — `DATA_DIR/master-mnemonic`,
 * generated once (24 words, mode 0600) and reused by every later start. An invalid mnemonic
 * (unknown word, bad checksum) stops start-up with a `ConfigError` naming the variable; the words
 * never appear in the message.
 *
 * Issue #34, finding 8: the generated file is written and read without following a link (O_NOFOLLOW)
 * and must be a regular file owned by the user running stablegate: another user's file, or a link,
 * would let someone else choose the keys. `MASTER_MNEMONIC_FILE` is the operator's own path: a link
 * there is followed (secret stores mount files as links), but the file must be owned by this user
 * or by root (never by another unprivileged user).
 */
export async function resolveMnemonic(config: Config): Promise<ResolvedMnemonic> {
  if (config.mnemonic.value !== undefined) {
    return { mnemonic: checked(config.mnemonic.value, "MASTER_MNEMONIC"), source: "MASTER_MNEMONIC" };
  }
  if (config.mnemonic.file !== undefined) {
    let text: string | undefined;
    try {
      text = await readKeyFile(config.mnemonic.file, { followLinks: true, alsoOwnedBy: [0] });
    } catch (err) {
      throw new ConfigError([
        {
          variable: "MASTER_MNEMONIC_FILE",
          message:
            err instanceof UnsafeFileError
              ? `${err.message}: refusing to read the master mnemonic from it`
              : `cannot read ${config.mnemonic.file} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
        },
      ]);
    }
    if (text === undefined)
      throw new ConfigError([
        { variable: "MASTER_MNEMONIC_FILE", message: `cannot read ${config.mnemonic.file} (ENOENT)` },
      ]);
    return { mnemonic: checked(text, "MASTER_MNEMONIC_FILE"), source: "MASTER_MNEMONIC_FILE" };
  }
  if (config.production) {
    // parseConfig refuses this already; kept so that no code path generates keys in production.
    throw new ConfigError([
      {
        variable: "MASTER_MNEMONIC",
        message: "MASTER_MNEMONIC or MASTER_MNEMONIC_FILE is required in production mode",
      },
    ]);
  }
  const file = generatedMnemonicPath(config.dataDir);
  await ensurePrivateDir(config.dataDir);
  let text: string | undefined;
  try {
    // Exclusive: exactly one of several processes starting at once creates it; the others read it.
    await writeKeyFile(file, `${bip39.generateMnemonic(wordlist, 256)}\n`, { exclusive: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw unsafe(err);
  }
  try {
    text = await readKeyFile(file);
  } catch (err) {
    throw unsafe(err);
  }
  if (text === undefined) throw new Error(`${file} disappeared while starting`);
  return {
    mnemonic: checked(text, "MASTER_MNEMONIC", `the generated mnemonic in ${file} is not valid`),
    source: "generated",
  };
}

/** An `UnsafeFileError` of the generated mnemonic as the ConfigError of its folder. */
function unsafe(err: unknown): unknown {
  if (!(err instanceof UnsafeFileError)) return err;
  return new ConfigError([
    {
      variable: "DATA_DIR",
      message: `${err.message}: refusing to use it as the generated master mnemonic (it must be a regular file owned by the user running stablegate)`,
    },
  ]);
}

function checked(raw: string, variable: string, message?: string): string {
  // Same normalisation as src/wallet/mnemonic.ts (whitespace, case, trailing newline of a file).
  const normalized = raw.trim().toLowerCase().split(/\s+/).join(" ");
  if (!bip39.validateMnemonic(normalized, wordlist)) {
    const words = normalized === "" ? 0 : normalized.split(" ").length;
    throw new ConfigError([
      {
        variable,
        message:
          message ??
          `not a valid English BIP39 mnemonic (${words} words; expected 12, 15, 18, 21 or 24 words from the BIP39 list with a valid checksum)`,
      },
    ]);
  }
  return normalized;
}
