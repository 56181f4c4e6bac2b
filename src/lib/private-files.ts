import { constants, type Stats } from "node:fs";
import { chmod, lstat, mkdir, open, readdir } from "node:fs/promises";
import path from "node:path";

/**
 * File modes of what the service keeps on disk (docs/decisions/security.md): private to the service's user.
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
  await walkWithoutLinks(target, async (p, s) => {
    if (s.isSymbolicLink()) return false;
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
    return true;
  });
  return changed;
}

/**
 * Visits `target` and, while `visit` answers true for a directory, everything under it, depth
 * first, reading each entry with `lstat` (links are handed to `visit`, never followed). An entry
 * removed during the walk is skipped.
 */
async function walkWithoutLinks(
  target: string,
  visit: (p: string, s: Stats) => Promise<boolean> | boolean,
): Promise<void> {
  const step = async (p: string): Promise<void> => {
    let s: Stats;
    try {
      s = await lstat(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    if (!(await visit(p, s)) || !s.isDirectory()) return;
    let names: string[];
    try {
      names = await readdir(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    for (const name of names) await step(path.join(p, name));
  };
  await step(target);
}

/**
 * Ownership (issue #34, finding 8): a DATA_DIR, or a file of ours in it, that another local user
 * owns or that is a symbolic link lets that user choose our key material (a planted mnemonic, a
 * planted JWT_SECRET) or redirect our writes. What the service keeps there must be a real entry
 * owned by the user running it.
 */

/** The user running this process, or undefined where the platform has none (Windows). */
export function processUid(): number | undefined {
  return process.getuid?.();
}

/** Why an entry (its lstat) is not ours to use: a symbolic link, or another owner; null when ours. */
export function notOurs(s: Stats, uid: number | undefined = processUid()): string | null {
  if (s.isSymbolicLink()) return "is a symbolic link";
  if (uid !== undefined && s.uid !== uid)
    return `is owned by uid ${s.uid}, not by the user running stablegate (uid ${uid})`;
  return null;
}

export interface ForeignEntry {
  path: string;
  /** e.g. "is a symbolic link", "is owned by uid 65534, not by …". */
  reason: string;
}

/**
 * The entries at `target` — and, when it is a directory, everything under it — that are symbolic
 * links or are not owned by this process's user (links are reported, never followed). A missing
 * target (or an entry removed during the walk) is fine. At most `limit` entries are returned.
 */
export async function foreignEntries(target: string, limit = 20): Promise<ForeignEntry[]> {
  const found: ForeignEntry[] = [];
  const uid = processUid();
  await walkWithoutLinks(target, (p, s) => {
    if (found.length >= limit) return false;
    const reason = notOurs(s, uid);
    if (reason) found.push({ path: p, reason });
    return !reason;
  });
  return found;
}

/** A key file that is not ours to read or write: `reason` says why (see `notOurs`). */
export class UnsafeFileError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path} ${reason}`);
    this.name = "UnsafeFileError";
  }
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** The error of an open(2) with O_NOFOLLOW on a symbolic link (ELOOP on Linux, EMLINK on FreeBSD). */
function linkRefused(err: unknown, file: string): never {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ELOOP" || code === "EMLINK") throw new UnsafeFileError(file, "is a symbolic link");
  throw err;
}

export interface ReadKeyFileOptions {
  /**
   * Follow a symbolic link at `file` (an operator's own path such as `MASTER_MNEMONIC_FILE`, which
   * a secret store may mount as a link). Default false: a link is refused (O_NOFOLLOW).
   */
  followLinks?: boolean;
  /** Owners accepted besides this process's user (e.g. root, for a file the operator provisioned). */
  alsoOwnedBy?: readonly number[];
}

/**
 * Reads a key file: opened without following a link at its last component (O_NOFOLLOW), then
 * checked on the open descriptor (no race with a swap of the path): a regular file owned by this
 * process's user. Undefined when it does not exist. Throws `UnsafeFileError` otherwise.
 */
export async function readKeyFile(
  file: string,
  options: ReadKeyFileOptions = {},
): Promise<string | undefined> {
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(file, constants.O_RDONLY | (options.followLinks ? 0 : NOFOLLOW));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    linkRefused(err, file);
  }
  try {
    checkOpened(file, await fh.stat(), options.alsoOwnedBy);
    return await fh.readFile("utf8");
  } finally {
    await fh.close();
  }
}

/**
 * Writes a key file of ours, mode 0600: created if missing, replaced otherwise, never through a
 * symbolic link (O_NOFOLLOW), and never one another user owns (checked on the open descriptor
 * before it is truncated). `exclusive`: fails with EEXIST when it exists (O_EXCL: exactly one of
 * several processes starting at once creates it).
 */
export async function writeKeyFile(file: string, data: string, options: { exclusive?: boolean } = {}) {
  const flags =
    constants.O_WRONLY | constants.O_CREAT | NOFOLLOW | (options.exclusive ? constants.O_EXCL : 0);
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(file, flags, PRIVATE_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw err;
    linkRefused(err, file);
  }
  try {
    const s = await fh.stat();
    checkOpened(file, s);
    if ((s.mode & 0o777) !== PRIVATE_FILE_MODE) await fh.chmod(PRIVATE_FILE_MODE);
    await fh.truncate(0);
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function checkOpened(file: string, s: Stats, alsoOwnedBy: readonly number[] = []): void {
  if (!s.isFile()) throw new UnsafeFileError(file, "is not a regular file");
  const uid = processUid();
  if (uid !== undefined && s.uid !== uid && !alsoOwnedBy.includes(s.uid))
    throw new UnsafeFileError(file, notOurs(s, uid) as string);
}
