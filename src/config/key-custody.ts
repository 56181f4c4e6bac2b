import { type Config, ConfigError } from "./config.js";

/**
 * What key material a process needs (docs/decisions/custody-and-faults.md#key-custody, key custody):
 * - `mnemonic`: it signs — the `signer` role, and `serve`, which embeds the signer (unless it is
 *   pointed at a separate signer with `SIGNER_URL`);
 * - `xpubs`: it derives addresses but never signs — `api` (checkout and wallet addresses),
 *   `worker` (the hot wallet, gas tank and deposit addresses it sends from, sweeps and watches),
 *   and `serve` with `SIGNER_URL`;
 * - `none`: `migrate` and the operator commands.
 */
export type KeyMaterial = "mnemonic" | "xpubs" | "none";

export function keyMaterialOf(role: string, config: Config): KeyMaterial {
  if (role === "signer") return "mnemonic";
  if (role === "serve") return config.sending.signerUrl ? "xpubs" : "mnemonic";
  if (role === "api" || role === "worker") return "xpubs";
  return "none";
}

const EXPORT_HINT =
  "print them on the signer host with `stablegate signer export-xpubs` and set MASTER_XPUBS to that line";

/**
 * The key material of `role`, checked against what it was given. In production mode the seed that
 * controls every address stays on the signer host: a role that does not sign refuses to start
 * when given the mnemonic (whoever takes over an internet-facing process must not find it), a
 * signing role refuses to start without it, and a deriving role without `MASTER_XPUBS`. Outside
 * production a deriving role without `MASTER_XPUBS` derives them from the (configured or
 * generated) mnemonic, so that embedded defaults need no setup (`wallet/account-keys.ts`).
 */
export function keyMaterialForRole(config: Config, role: string): KeyMaterial {
  const need = keyMaterialOf(role, config);
  if (!config.production) return need;
  const given = config.mnemonic.value !== undefined || config.mnemonic.file !== undefined;
  const variable = config.mnemonic.file !== undefined ? "MASTER_MNEMONIC_FILE" : "MASTER_MNEMONIC";
  const label = isRole(role) ? `the ${role} role` : `\`stablegate ${role}\``;
  if (need === "mnemonic" && !given) {
    throw new ConfigError([
      {
        variable: "MASTER_MNEMONIC",
        message: `MASTER_MNEMONIC or MASTER_MNEMONIC_FILE is required in production mode for ${label} (it signs transfers)`,
      },
    ]);
  }
  if (need !== "mnemonic" && given) {
    throw new ConfigError([
      {
        variable,
        message:
          `${label} never signs, so it must not hold the mnemonic that controls every address (docs/decisions/custody-and-faults.md#key-custody): ` +
          "remove it from this process's environment and keep it on the signer host only" +
          (need === "xpubs" ? `; this role derives addresses from MASTER_XPUBS (${EXPORT_HINT})` : ""),
      },
    ]);
  }
  if (need === "xpubs" && config.accountXpubs === undefined) {
    throw new ConfigError([
      {
        variable: "MASTER_XPUBS",
        message: `required in production mode for ${label}: the account public keys it derives addresses from (${EXPORT_HINT})`,
      },
    ]);
  }
  return need;
}

function isRole(word: string): boolean {
  return ["serve", "api", "worker", "migrate", "signer"].includes(word);
}
