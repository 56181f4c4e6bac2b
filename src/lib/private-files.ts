import { chmod, lstat, mkdir, readdir } from "node:fs/promises";
import path from "node:path";

/**
 * File modes of what the service keeps on disk (CONTRACT §9): private to the service's user.
 * The process umask (0o077, set by `main.ts`) covers what Node creates; these helpers cover what
 * it does not: folders and files left by an older version, and PGlite, whose file system layer
 * (Emscripten's NODEFS) sets the modes of the data folder it unpacks explicitly (0666), whatever
 * the umask.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

export interface ModeChange {
  path: string;
  /** The mode before (permission bits). */
  from: number;
}

/**
 * Creates `dir` (and missing parents) and makes `dir` itself 0700. Returns the change when an
 * existing `dir` was open to other users.
 */
export async function ensurePrivateDir(dir: string): Promise<ModeChange | null> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const mode = (await lstat(dir)).mode & 0o777;
  if (mode === PRIVATE_DIR_MODE) return null;
  await chmod(dir, PRIVATE_DIR_MODE);
  return { path: dir, from: mode };
}

/**
 * Makes `target` private and, when it is a directory, everything under it: directories 0700,
 * files and sockets 0600. Symbolic links are neither followed nor changed. A missing target (or
 * an entry removed during the walk, e.g. a recycled WAL segment) is skipped. Returns what changed.
 */
export async function makePrivate(target: string): Promise<ModeChange[]> {
  const changed: ModeChange[] = [];
  const visit = async (p: string): Promise<void> => {
    let s: Awaited<ReturnType<typeof lstat>>;
    try {
      s = await lstat(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    if (s.isSymbolicLink()) return;
    const want = s.isDirectory() ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE;
    const mode = s.mode & 0o777;
    if (mode !== want) {
      try {
        await chmod(p, want);
        changed.push({ path: p, from: mode });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    }
    if (!s.isDirectory()) return;
    let names: string[];
    try {
      names = await readdir(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    for (const name of names) await visit(path.join(p, name));
  };
  await visit(target);
  return changed;
}
