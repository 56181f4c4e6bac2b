import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { ensurePrivateDir } from "../lib/private-files.js";
import { type Config, GENERATED_SECRET_NAMES, type GeneratedSecretName } from "./config.js";

export type ResolvedSecrets = Record<GeneratedSecretName, string>;

/**
 * Returns every secret, generating the missing ones into `DATA_DIR/secrets.json` (mode 0600)
 * outside production mode so that restarts keep them (data encrypted with a lost key is lost).
 * In production mode `parseConfig` has already refused to start without them.
 */
export async function resolveSecrets(config: Config): Promise<ResolvedSecrets> {
  const missing = GENERATED_SECRET_NAMES.filter((n) => !config.secrets[n]);
  if (missing.length === 0) return config.secrets as ResolvedSecrets;
  if (config.production) throw new Error(`refusing to generate ${missing.join(", ")} in production mode`);

  const file = path.join(config.dataDir, "secrets.json");
  let stored: Partial<ResolvedSecrets> = {};
  try {
    stored = JSON.parse(await readFile(file, "utf8")) as Partial<ResolvedSecrets>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  let changed = false;
  for (const name of missing) {
    if (!stored[name]) {
      stored[name] = randomBytes(32).toString("hex");
      changed = true;
    }
  }
  if (changed) {
    await ensurePrivateDir(config.dataDir);
    await writeFile(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
  }
  const out = { ...stored } as ResolvedSecrets;
  for (const name of GENERATED_SECRET_NAMES) {
    const configured = config.secrets[name];
    if (configured) out[name] = configured;
  }
  return out;
}
