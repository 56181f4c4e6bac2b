import { access } from "node:fs/promises";
import path from "node:path";
import { generatedMnemonicPath } from "../config/mnemonic.js";
import { lockPath } from "../db/embedded-lock.js";
import { ensurePrivateDir, type ModeChange, makePrivate } from "../lib/private-files.js";
import type { Logger } from "../observability/logger.js";
import { controlSocketPath } from "../runtime.js";

/**
 * Start-up of every role (CONTRACT §9: DATA_DIR and everything the service writes in it are
 * private): a DATA_DIR left open by an older version (0755 folder, 0644/0666 files) is made
 * private — the folder 0700, and what the service writes in it (the embedded database, generated
 * secrets and mnemonic, lock file, control socket) 0700/0600 — and the log says so. Only those
 * entries: an operator's DATA_DIR may hold other things, which are not ours to change. A DATA_DIR
 * that does not exist is not created here (the first writer creates it 0700).
 */
export async function tightenDataDir(dataDir: string, log: Logger): Promise<ModeChange[]> {
  try {
    await access(dataDir);
  } catch {
    return [];
  }
  const changed: ModeChange[] = [];
  const dir = await ensurePrivateDir(dataDir);
  if (dir) changed.push(dir);
  for (const entry of [
    path.join(dataDir, "pglite"), // the embedded database (runtime.ts)
    path.join(dataDir, "secrets.json"),
    generatedMnemonicPath(dataDir),
    lockPath(dataDir),
    controlSocketPath(dataDir),
  ]) {
    changed.push(...(await makePrivate(entry)));
  }
  if (changed.length > 0) {
    log.warn(
      {
        dataDir,
        changed: changed.length,
        examples: changed
          .slice(0, 5)
          .map((c) => `${path.relative(dataDir, c.path) || "."} was ${c.from.toString(8)}`),
      },
      "DATA_DIR was accessible to other users; made it private (directories 0700, files 0600)",
    );
  }
  return changed;
}
