import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArchiveError, extractArchive, writeArchive } from "../../src/backup/archive.js";

// The backup container (src/backup/archive.ts): a ustar archive that tar reads, read back strictly.

const run = promisify(execFile);
let dir: string;
let n = 0;
const fresh = () => mkdtemp(path.join(dir, `x${++n}-`));

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sg-archive-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function sample() {
  const big = path.join(dir, `dump-${++n}`);
  const dump = randomBytes(3 * 1024 * 1024 + 123); // spans chunks, not a multiple of 512
  await writeFile(big, dump);
  const file = path.join(dir, `a-${++n}.sgb`);
  const size = await writeArchive(file, [
    { name: "manifest.json", data: Buffer.from('{"format":"stablegate-backup"}\n') },
    { name: "config.json", data: Buffer.from("{}") },
    { name: "database.pgdump", file: big },
  ]);
  return { file, size, dump };
}

describe("backup archive", () => {
  it("round-trips its entries, and tar lists and extracts them with their digests", async () => {
    const { file, size, dump } = await sample();
    expect((await stat(file)).size).toBe(size);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const out = await fresh();
    const entries = await extractArchive(file, out);
    expect([...entries.keys()]).toEqual(["manifest.json", "config.json", "database.pgdump", "SHA256SUMS"]);
    // Buffer.equals: a deep equality of 3 MiB element by element takes seconds.
    expect((await readFile(entries.get("database.pgdump")?.file as string)).equals(dump)).toBe(true);

    const listed = await run("tar", ["tf", file]);
    expect(listed.stdout.trim().split("\n")).toEqual([
      "manifest.json",
      "config.json",
      "database.pgdump",
      "SHA256SUMS",
    ]);
    const byTar = await fresh();
    await run("tar", ["xf", file, "-C", byTar]);
    const check = await run("sha256sum", ["-c", "SHA256SUMS"], { cwd: byTar });
    expect(check.stdout).toMatch(/database\.pgdump: OK/);
  });

  it("never replaces a file", async () => {
    const { file } = await sample();
    await expect(
      writeArchive(file, [{ name: "config.json", data: Buffer.from("{}") }]),
    ).rejects.toMatchObject({ code: "EEXIST" });
  });

  it("refuses every truncation and a flipped bit in any block", async () => {
    const { file } = await sample();
    const bytes = await readFile(file);
    const blocks = bytes.length / 512;
    // Every header and padding region, and samples of the data, flipped one at a time.
    // 154 and 155: the checksum field's NUL and space, which tar-stream's number parsing skips.
    const positions = [
      0,
      100,
      124,
      148,
      154,
      155,
      156,
      257,
      511,
      512,
      1000,
      1023,
      1536,
      2047,
      bytes.length - 1,
    ];
    for (let i = 0; i < 40; i++) positions.push(Math.floor(Math.random() * bytes.length));
    for (const at of positions) {
      const damaged = Buffer.from(bytes);
      damaged[at] = (damaged[at] ?? 0) ^ 0x40;
      const f = path.join(dir, `flip-${++n}`);
      await writeFile(f, damaged);
      await expect(
        extractArchive(f, await fresh()),
        `flip at ${at} of ${bytes.length}`,
      ).rejects.toBeInstanceOf(ArchiveError);
    }
    for (const cut of [
      0,
      1,
      511,
      512,
      513,
      4096,
      bytes.length / 2,
      bytes.length - 1025,
      bytes.length - 512,
      bytes.length - 1,
    ]) {
      const f = path.join(dir, `cut-${++n}`);
      await writeFile(f, bytes.subarray(0, cut));
      await expect(
        extractArchive(f, await fresh()),
        `cut at ${cut} of ${blocks} blocks`,
      ).rejects.toBeInstanceOf(ArchiveError);
    }
  });

  it("refuses an archive of other names, a link, or a path", async () => {
    const out = await fresh();
    await writeFile(path.join(out, "evil"), "x");
    const tarred = path.join(dir, `other-${++n}.tar`);
    await run("tar", ["--format=ustar", "-cf", tarred, "-C", out, "evil"]);
    await expect(extractArchive(tarred, await fresh())).rejects.toThrow(/unexpected entry "evil"/);
    const traversal = path.join(dir, `trav-${++n}.tar`);
    await run("tar", ["--format=ustar", "-cf", traversal, "-C", out, "--transform", "s,^,../,", "evil"]);
    await expect(extractArchive(traversal, await fresh())).rejects.toThrow(/unexpected entry/);
    await expect(extractArchive(path.join(dir, "missing"), await fresh())).rejects.toThrow(/cannot open/);
  });

  it("refuses what tar reads past: an extended header, an empty block between entries, a name twice", async () => {
    const out = await fresh();
    await writeFile(path.join(out, "manifest.json"), "{}");
    const pax = path.join(dir, `pax-${++n}.tar`);
    await run("tar", ["--format=pax", "-cf", pax, "-C", out, "manifest.json"]);
    await expect(extractArchive(pax, await fresh())).rejects.toThrow(
      /follows headers stablegate does not write/,
    );
    const twice = path.join(dir, `twice-${++n}.tar`);
    await run("tar", [
      "--format=ustar",
      "--hard-dereference",
      "-cf",
      twice,
      "-C",
      out,
      "manifest.json",
      "manifest.json",
    ]);
    await expect(extractArchive(twice, await fresh())).rejects.toThrow(/manifest\.json appears twice/);
    // A zero block after the first entry (manifest.json: one header, one block of data).
    const { file } = await sample();
    const bytes = await readFile(file);
    const gap = path.join(dir, `gap-${++n}`);
    await writeFile(gap, Buffer.concat([bytes.subarray(0, 1024), Buffer.alloc(512), bytes.subarray(1024)]));
    await expect(extractArchive(gap, await fresh())).rejects.toThrow(
      /follows headers stablegate does not write/,
    );
  });

  it("a valid tar of the right names without SHA256SUMS is refused as incomplete", async () => {
    const out = await fresh();
    await writeFile(path.join(out, "manifest.json"), "{}");
    const tarred = path.join(dir, `nosums-${++n}.tar`);
    await run("tar", ["--format=ustar", "-cf", tarred, "-C", out, "manifest.json"]);
    await expect(extractArchive(tarred, await fresh())).rejects.toThrow(/no SHA256SUMS/);
  });
});
