import { lstat } from "node:fs/promises";
import path from "node:path";
import { generatedMnemonicPath } from "../config/mnemonic.js";
import { lockPath } from "../db/embedded-lock.js";
import {
  ensurePrivateDir,
  type ForeignEntry,
  foreignEntries,
  type ModeChange,
  makePrivate,
  notOurs,
} from "../lib/private-files.js";
import type { Logger } from "../observability/logger.js";
import { controlSocketPath } from "../runtime.js";
import { StartupError } from "./startup-error.js";

/** What the service keeps in DATA_DIR (the embedded database's folder holds the mail outbox too). */
function entriesOfOurs(dataDir: string): string[] {
  return [
    path.join(dataDir, "pglite"), // the embedded database (runtime.ts)
    path.join(dataDir, "secrets.json"),
    generatedMnemonicPath(dataDir),
    lockPath(dataDir),
    controlSocketPath(dataDir),
  ];
}

/**
 * Issue #34, finding 8: refuses (StartupError, before anything is read, created or chmod'ed there)
 * a DATA_DIR that is a symbolic link, is not a directory or is not owned by the user running this
 * process, and one where anything the service keeps (the list above; the embedded database's tree
 * entry by entry) is a symbolic link or another user's. Whoever owns the folder, or can point a
 * link, chooses the mnemonic the service derives its deposit addresses from and the JWT_SECRET
 * that signs its sessions. The folder's ancestors are the operator's (`/var/lib` → a link is
 * common) and are not judged; its last component is.
 */
export async function assertDataDirOurs(dataDir: string): Promise<void> {
  let top: Awaited<ReturnType<typeof lstat>>;
  try {
    top = await lstat(dataDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  const problems: ForeignEntry[] = [];
  const reason = notOurs(top) ?? (top.isDirectory() ? null : "is not a directory");
  if (reason) problems.push({ path: dataDir, reason });
  else for (const entry of entriesOfOurs(dataDir)) problems.push(...(await foreignEntries(entry)));
  if (problems.length === 0) return;
  const shown = problems.slice(0, 10).map((p) => `  ${p.path} ${p.reason}`);
  if (problems.length > shown.length) shown.push(`  … and ${problems.length - shown.length} more`);
  throw new StartupError(
    `refusing to use DATA_DIR ${dataDir}:\n${shown.join("\n")}\n` +
      "DATA_DIR holds the key material and the data of this service (generated mnemonic, secrets.json, " +
      "the embedded database, its lock and control socket): the folder and everything stablegate keeps in it " +
      "must be real entries (no symbolic links) owned by the user running stablegate. Check who planted " +
      "them before changing their owner, or point DATA_DIR at a folder of this user's.",
  );
}

/**
 * Start-up of every role (docs/decisions/security.md: DATA_DIR and everything the service writes in it are
 * private): a DATA_DIR left open by an older version (0755 folder, 0644/0666 files) is made
 * private — the folder 0700, and what the service writes in it (the embedded database, generated
 * secrets and mnemonic, lock file, control socket) 0700/0600 — and the log says so. Only those
 * entries: an operator's DATA_DIR may hold other things, which are not ours to change. A DATA_DIR
 * that does not exist is not created here (the first writer creates it 0700). First of all, a
 * DATA_DIR that is not ours, or holds a link or another user's entry where ours go, is refused
 * (`assertDataDirOurs`): nothing of it is changed.
 */
export async function tightenDataDir(dataDir: string, log: Logger): Promise<ModeChange[]> {
  try {
    await lstat(dataDir);
  } catch {
    return [];
  }
  await assertDataDirOurs(dataDir);
  const changed: ModeChange[] = [];
  const dir = await ensurePrivateDir(dataDir);
  if (dir) changed.push(dir);
  for (const entry of entriesOfOurs(dataDir)) {
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
