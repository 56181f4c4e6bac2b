import { open, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { ensurePrivateDir } from "../lib/private-files.js";

/**
 * PGlite is one process's database: two processes opening the same data folder would corrupt it.
 * The process that opens it holds `DATA_DIR/stablegate.lock` (its pid and its operator control
 * socket); others find the holder there and talk to it through that socket instead.
 */
export interface EmbeddedLockInfo {
  pid: number;
  role: string;
  controlSocket: string | null;
  startedAt: string;
}

export function lockPath(dataDir: string): string {
  return path.join(dataDir, "stablegate.lock");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The live holder of the data folder, if any (a stale lock of a dead process is ignored). */
export async function readEmbeddedLock(dataDir: string): Promise<EmbeddedLockInfo | undefined> {
  try {
    const info = JSON.parse(await readFile(lockPath(dataDir), "utf8")) as EmbeddedLockInfo;
    return info.pid !== process.pid && alive(info.pid) ? info : undefined;
  } catch {
    return undefined;
  }
}

export class DataDirInUseError extends Error {
  constructor(readonly holder: EmbeddedLockInfo) {
    super(
      `DATA_DIR is in use by stablegate ${holder.role} (pid ${holder.pid}). The embedded database serves one ` +
        "process; stop it, or set DATABASE_URL to run several processes.",
    );
  }
}

export async function acquireEmbeddedLock(
  dataDir: string,
  info: Omit<EmbeddedLockInfo, "pid" | "startedAt">,
): Promise<{ release(): Promise<void> }> {
  await ensurePrivateDir(dataDir);
  const file = lockPath(dataDir);
  const content = JSON.stringify({ ...info, pid: process.pid, startedAt: new Date().toISOString() });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(file, "wx", 0o600);
      await fh.writeFile(content);
      await fh.close();
      return {
        async release() {
          await rm(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = await readEmbeddedLock(dataDir);
      if (holder) throw new DataDirInUseError(holder);
      await rm(file, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`could not acquire ${file}`);
}
