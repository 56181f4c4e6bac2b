import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { type FileHandle, link, open, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import * as tar from "tar-stream";

/**
 * The backup file's container: a POSIX ustar archive, so that an operator without stablegate can
 * list it (`tar tvf`) and take out the database dump (`tar xf`, then `pg_restore` or PGlite's
 * `loadDataDir`). `tar-stream` encodes and decodes it (headers, checksums, GNU base-256 sizes above
 * 8 GiB, padding); this file adds what makes it a backup and reads it back strictly:
 *
 * - only the names of `ENTRY_NAMES`, each at most once, regular files only (no links, no paths:
 *   nothing can be written outside the folder the reader extracts into);
 * - the archive holds nothing but those entries, back to back, each header at the offset the one
 *   before ends at (no extended or empty headers tar-stream would skip silently), every padding
 *   byte zero, and after the last entry two or more zero blocks and nothing else: with the
 *   headers' checksums (tar-stream's) and the digests below, a flipped byte anywhere is found;
 * - `SHA256SUMS` (`sha256sum -c` reads it) holds the digest of every entry before it: a truncated
 *   archive lacks it or an entry, an altered one differs from it. Plain digests catch accidents,
 *   not a forger who recomputes them: the last entry, `SHA256SUMS.hmac`, authenticates
 *   `SHA256SUMS` under a key of the installation (`authenticity.ts`; the restore checks it).
 */

export const ENTRY_NAMES = [
  "manifest.json",
  "config.json",
  "database.pgdump",
  "database.pglite.tar.gz",
  "secrets.enc",
  "SHA256SUMS",
  "SHA256SUMS.hmac",
] as const;
export type EntryName = (typeof ENTRY_NAMES)[number];

export const SUMS_ENTRY = "SHA256SUMS";
/** After `SHA256SUMS`, the only entry that may follow, and the last: its authentication (`authenticity.ts`). */
export const SUMS_MAC_ENTRY = "SHA256SUMS.hmac";

/** The entries that are read into memory (parsed as JSON or text) have a size limit. */
export const MAX_SMALL_ENTRY = 16 * 1024 * 1024;

export type EntrySource = { name: EntryName; data: Buffer } | { name: EntryName; file: string };

export interface ExtractedEntry {
  name: EntryName;
  /** Where the reader wrote it (inside the folder it was given). */
  file: string;
  size: number;
  sha256: string;
}

/** A file that is not a sound backup archive: truncated, altered, or not one of ours. */
export class ArchiveError extends Error {}

const BLOCK = 512;
const CHUNK = 1024 * 1024;
type EntryHeader = Parameters<tar.Pack["entry"]>[0];

export async function sha256OfFile(file: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256: hash.digest("hex"), size };
}

export function sha256(data: Buffer | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** A file system's error (a full disk, an unreadable file), not one of tar-stream's. */
const isSystemError = (err: unknown) => typeof (err as NodeJS.ErrnoException).syscall === "string";

/**
 * Adds one entry to `pack`, its data from `source` (a Buffer, or a file streamed in); resolves
 * with its SHA-256 once tar-stream has taken all of it.
 */
async function addEntry(pack: tar.Pack, header: EntryHeader, source: Buffer | string): Promise<string> {
  if (typeof source !== "string") {
    await new Promise<void>((resolve, reject) =>
      pack.entry(header, source, (err) => (err ? reject(err) : resolve())),
    );
    return sha256(source);
  }
  const hash = createHash("sha256");
  let copied = 0;
  const input = createReadStream(source);
  try {
    await new Promise<void>((resolve, reject) => {
      const sink = pack.entry(header, (err) => (err ? reject(err) : resolve()));
      sink.on("error", () => {}); // the callback has it (and pipe would throw it again)
      input.on("error", (err) => sink.destroy(err));
      input.on("data", (chunk: string | Buffer) => {
        hash.update(chunk);
        copied += chunk.length;
      });
      input.pipe(sink as unknown as NodeJS.WritableStream);
    });
  } catch (err) {
    // tar-stream refuses an entry whose data is not the size its header announced.
    if (copied !== header.size) throw new Error(`${source} changed while it was archived`);
    throw err;
  } finally {
    input.destroy();
  }
  return hash.digest("hex");
}

/**
 * Writes `entries` and their `SHA256SUMS` as one archive at `target`, mode 0600, never replacing a
 * file: written under a temporary name in the same folder, synced, then linked to `target` (which
 * fails if it exists) and the temporary name removed. `authenticate` makes the `SHA256SUMS.hmac`
 * entry from the bytes of `SHA256SUMS` (a backup always has one; without it the restore refuses
 * the archive). Returns the archive's size.
 */
export async function writeArchive(
  target: string,
  entries: readonly EntrySource[],
  authenticate?: (sums: Buffer) => Buffer,
): Promise<number> {
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString("hex")}`);
  const fh = await open(temp, "wx", 0o600);
  const mtime = new Date(Math.floor(Date.now() / 1000) * 1000);
  const fields = { mode: 0o600, mtime, type: "file", uname: "stablegate", gname: "stablegate" } as const;
  const header = (name: EntryName, size: number): EntryHeader => ({ ...fields, name, size });
  const pack = tar.pack();
  let written = 0;
  let packing: unknown = null;
  let writing: unknown = null;
  const produce = async () => {
    try {
      const sums: string[] = [];
      for (const entry of entries) {
        if (entry.name === SUMS_ENTRY || entry.name === SUMS_MAC_ENTRY)
          throw new Error(`${entry.name} is written by the archive itself`);
        const size = "data" in entry ? entry.data.length : (await stat(entry.file)).size;
        const source = "data" in entry ? entry.data : entry.file;
        sums.push(`${await addEntry(pack, header(entry.name, size), source)}  ${entry.name}\n`);
      }
      const sumsData = Buffer.from(sums.join(""), "utf8");
      await addEntry(pack, header(SUMS_ENTRY, sumsData.length), sumsData);
      if (authenticate) {
        const mac = authenticate(sumsData);
        await addEntry(pack, header(SUMS_MAC_ENTRY, mac.length), mac);
      }
      pack.finalize();
    } catch (err) {
      packing = err;
      pack.destroy(err as Error);
    }
  };
  const consume = async () => {
    try {
      for await (const chunk of pack as AsyncIterable<Buffer>) {
        await fh.write(chunk);
        written += chunk.length;
      }
    } catch (err) {
      writing = err;
    }
  };
  try {
    await Promise.all([produce(), consume()]);
    // When one side fails, the other fails too, because the pack is gone: a write's error (the
    // disk is full) is the cause; otherwise the packing's.
    if (writing && isSystemError(writing)) throw writing;
    if (packing || writing) throw packing ?? writing;
    await fh.sync();
    await fh.close();
    await link(temp, target);
  } catch (err) {
    await fh.close().catch(() => {});
    throw err;
  } finally {
    await rm(temp, { force: true });
  }
  return written;
}

const TRUNCATED = "the archive is truncated (it ends before its last entry)";

/** What tar-stream's refusals mean for a backup (its messages are its own, not an API). */
function tarError(err: unknown): unknown {
  if (err instanceof ArchiveError || isSystemError(err)) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/unexpected end of data/i.test(message))
    return new ArchiveError(
      "the archive is truncated (it ends inside an entry), or has stray bytes at its end",
    );
  if (/unknown format/i.test(message))
    return new ArchiveError("not a stablegate backup (not a ustar archive)");
  if (/invalid tar header\. /i.test(message))
    return new ArchiveError("a header's checksum does not match: the archive is damaged or altered");
  return new ArchiveError(`the archive is damaged or altered (${message})`);
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await fh.read(buf, 0, length, position);
  if (bytesRead !== length) throw new ArchiveError(TRUNCATED);
  return buf;
}

const zero = (b: Buffer) => b.every((x) => x === 0);

/**
 * What tar-stream does not check: that each header's checksum field is written as tar writes it
 * (six octal digits, then a NUL and a space in either order — tar-stream's number parsing stops at
 * the first space, so a byte flipped after the digits would go unseen), that the padding after
 * each entry is zero, and that the archive ends with two or more zero blocks and nothing else.
 * `spans` are the entries' header offsets and sizes, back to back (the reader checked that).
 */
async function checkLayout(fh: FileHandle, total: number, spans: { offset: number; size: number }[]) {
  let end = 0;
  for (const { offset, size } of spans) {
    const checksum = (await readAt(fh, offset, BLOCK)).subarray(148, 156).toString("latin1");
    if (!/^[0-7]{6}(\0 | \0)$/.test(checksum))
      throw new ArchiveError("a header's checksum field is damaged: the archive is damaged or altered");
    const padded = Math.ceil(size / BLOCK) * BLOCK;
    if (padded > size && !zero(await readAt(fh, offset + BLOCK + size, padded - size)))
      throw new ArchiveError("the padding after an entry is not zero: the archive is damaged or altered");
    end = offset + BLOCK + padded;
  }
  if (total - end < 2 * BLOCK) throw new ArchiveError("the archive is truncated (it lacks its end marker)");
  if (!zero(await readAt(fh, end, 2 * BLOCK))) throw new ArchiveError("the archive's end marker is damaged");
  // tar pads to its record size (10 KiB) with zeros; read in chunks of 1 MiB at most.
  for (let at = end + 2 * BLOCK; at < total; at += CHUNK)
    if (!zero(await readAt(fh, at, Math.min(CHUNK, total - at))))
      throw new ArchiveError("the archive holds data after its end marker");
}

/**
 * Reads and checks the archive at `file`, writing each entry into `into` (a private folder of the
 * caller's) under its own name. Refuses (ArchiveError) anything but a complete, unaltered archive
 * of the known entries whose `SHA256SUMS` matches. A size limit applies to the small entries.
 */
export async function extractArchive(file: string, into: string): Promise<Map<EntryName, ExtractedEntry>> {
  let fh: FileHandle;
  try {
    fh = await open(file, "r");
  } catch (err) {
    throw new ArchiveError(`cannot open ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  const out = new Map<EntryName, ExtractedEntry>();
  const spans: { offset: number; size: number }[] = [];
  const extract = tar.extract();
  // tar-stream fails the entry being read with "stream destroyed" and tells why only in an event.
  let failure: Error | null = null;
  extract.on("error", (err) => {
    failure ??= err;
  });
  const closed = new Promise<void>((resolve) => extract.on("close", () => resolve()));
  const input = fh.createReadStream({ start: 0, autoClose: false });
  try {
    const total = (await fh.stat()).size;
    input.on("error", (err) => extract.destroy(err));
    input.pipe(extract as unknown as NodeJS.WritableStream);
    let next = 0;
    try {
      for await (const entry of extract) {
        const { name, size, type } = entry.header;
        if (out.has(SUMS_MAC_ENTRY))
          throw new ArchiveError(`an entry follows ${SUMS_MAC_ENTRY}, which must be the last`);
        if (out.has(SUMS_ENTRY) && name !== SUMS_MAC_ENTRY)
          throw new ArchiveError(`an entry follows ${SUMS_ENTRY} other than ${SUMS_MAC_ENTRY}`);
        if (name === SUMS_MAC_ENTRY && !out.has(SUMS_ENTRY))
          throw new ArchiveError(`${SUMS_MAC_ENTRY} must follow ${SUMS_ENTRY}`);
        if (type !== "file") throw new ArchiveError(`entry ${JSON.stringify(name)} is not a regular file`);
        if (!(ENTRY_NAMES as readonly string[]).includes(name))
          throw new ArchiveError(`unexpected entry ${JSON.stringify(name)}: not a stablegate backup`);
        if (entry.offset !== next)
          throw new ArchiveError(
            `entry ${name} follows headers stablegate does not write: not a stablegate backup`,
          );
        const entryName = name as EntryName;
        if (out.has(entryName)) throw new ArchiveError(`entry ${name} appears twice`);
        const small = entryName !== "database.pgdump" && entryName !== "database.pglite.tar.gz";
        if (small && size > MAX_SMALL_ENTRY)
          throw new ArchiveError(`entry ${name} is too large (${size} bytes)`);
        const target = path.join(into, entryName);
        const dest = await open(target, "wx", 0o600);
        const hash = createHash("sha256");
        try {
          for await (const chunk of entry as AsyncIterable<Buffer>) {
            hash.update(chunk);
            await dest.write(chunk);
          }
        } finally {
          await dest.close();
        }
        out.set(entryName, { name: entryName, file: target, size, sha256: hash.digest("hex") });
        spans.push({ offset: entry.offset, size });
        next = entry.offset + BLOCK + Math.ceil(size / BLOCK) * BLOCK;
      }
    } catch (err) {
      if (err instanceof ArchiveError || isSystemError(err)) throw err;
      extract.destroy();
      await closed;
      throw tarError(failure ?? err);
    }
    await checkLayout(fh, total, spans);
  } finally {
    input.destroy();
    await fh.close();
  }
  const sums = out.get(SUMS_ENTRY);
  if (!sums) throw new ArchiveError(`the archive has no ${SUMS_ENTRY} (truncated?)`);
  const listed = new Map<string, string>();
  for (const line of (await readFile(sums.file, "utf8")).split("\n")) {
    if (line === "") continue;
    const m = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
    if (!m) throw new ArchiveError(`${SUMS_ENTRY} is malformed`);
    listed.set(m[2] as string, m[1] as string);
  }
  for (const entry of out.values()) {
    if (entry.name === SUMS_ENTRY || entry.name === SUMS_MAC_ENTRY) continue;
    const digest = listed.get(entry.name);
    if (digest === undefined) throw new ArchiveError(`${SUMS_ENTRY} does not list ${entry.name}`);
    if (digest !== entry.sha256)
      throw new ArchiveError(
        `entry ${entry.name} does not match its digest: the archive is damaged or altered`,
      );
    listed.delete(entry.name);
  }
  if (listed.size > 0)
    throw new ArchiveError(`the archive lacks ${[...listed.keys()].join(", ")} (truncated or altered)`);
  return out;
}
