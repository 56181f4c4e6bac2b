import { type ChildProcess, spawn } from "node:child_process";
import {
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { resolveMnemonic } from "../../src/config/mnemonic.js";
import { resolveSecrets } from "../../src/config/secrets.js";
import { createLogger } from "../../src/observability/logger.js";
import { tightenDataDir } from "../../src/roles/data-dir.js";
import { mainArgs } from "../support/processes.js";

// Issue #34, finding 8: a DATA_DIR owned by another local user was accepted, with a mnemonic and a
// `secrets.json` planted in it: the service derived its deposit addresses from the attacker's
// mnemonic and signed dashboard sessions with the attacker's JWT_SECRET, warning only about file
// modes (it even chmod'ed the attacker's files). Afterwards every role refuses to start when
// DATA_DIR, or anything of ours in it (generated mnemonic, secrets.json, the embedded database
// folder — which holds the mail outbox —, lock file, control socket), is a symbolic link or is not
// owned by the process's user; the key files are opened without following links.
//
// The real CLI (`src/main.ts`, bundled: test/support/processes.ts, as test/security/06 runs it), with a clean environment
// (always the embedded database: DATA_DIR is where it lives). These tests run as root; "another
// user" is `nobody` (uid 65534): root can chown a folder to it, as an attacker with a local account
// would simply own theirs.

const ROOT = path.resolve(import.meta.dirname, "../..");
const NOBODY = 65534;
const silent = createLogger("silent");
const ATTACKER_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow";
const ATTACKER_SECRETS = {
  SECRET_ENCRYPTION_KEY: "a".repeat(64),
  JWT_SECRET: "b".repeat(64),
  INTERNAL_SHARED_SECRET: "c".repeat(64),
};

let parent: string;
/** A DATA_DIR of ours made by one real start (PGlite tree, secrets, mnemonic); copied per test. */
let template: string;
beforeAll(async () => {
  parent = await mkdtemp(path.join(tmpdir(), "sg-owner-"));
  if (process.getuid?.() !== 0) return;
  template = path.join(parent, "template");
  const first = await run(template);
  expect(first.outcome, first.out).toBe("started");
  expect(first.code, first.out).toBe(0);
}, 120_000);
afterAll(() => rm(parent, { recursive: true, force: true }));

const isRoot = process.getuid?.() === 0;

function env(dataDir: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATA_DIR: dataDir,
    LOG_LEVEL: "info",
    PORT: "0",
    SANDBOX_PORT: "0",
    PRODUCTION_BASE_URL: "http://api.stablegate.test",
    SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
  };
}

/**
 * `stablegate <role>` on `dataDir`: resolves with its exit code and output once it exits, or with
 * `started` once it listens (then it is stopped: the refusal did not happen).
 */
function run(
  dataDir: string,
  role = "serve",
): Promise<{ outcome: "exited" | "started"; code: number | null; out: string }> {
  const child: ChildProcess = spawn(process.execPath, [...mainArgs(), role], {
    env: env(dataDir),
    cwd: ROOT,
  });
  let out = "";
  let stopped = false;
  const collect = (c: Buffer) => {
    out += c;
    if (!stopped && (out.includes('"stablegate listening"') || out.includes("signer listening"))) {
      stopped = true;
      child.kill("SIGTERM");
    }
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  return new Promise((resolve) => {
    child.on("exit", (code) => {
      const started = out.includes('"stablegate listening"') || out.includes("signer listening");
      resolve({ outcome: started ? "started" : "exited", code, out });
    });
  });
}

/** Refused at start-up: exit 2, a message naming the entry and the reason, nothing served. */
function expectRefused(r: Awaited<ReturnType<typeof run>>, entry: RegExp, reason: RegExp) {
  expect(r.outcome, r.out).toBe("exited");
  expect(r.code, r.out).toBe(2);
  expect(r.out).toMatch(/stablegate: /);
  expect(r.out).toMatch(entry);
  expect(r.out).toMatch(reason);
}

/** A DATA_DIR of ours that has been used (a copy of the template, modes and owners kept). */
async function preparedDataDir(name: string): Promise<string> {
  const dataDir = path.join(parent, name, "data");
  await mkdir(path.dirname(dataDir), { recursive: true });
  await cp(template, dataDir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  return dataDir;
}

/** Every entry under `root` with its owner, by lstat (links reported, never followed). */
async function owners(root: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (p: string) => {
    const s = await lstat(p);
    out.push(`${path.relative(root, p) || "."} ${s.uid} ${(s.mode & 0o777).toString(8)}`);
    if (s.isDirectory()) for (const n of await readdir(p)) await visit(path.join(p, n));
  };
  await visit(root);
  return out.sort();
}

const CHILD = { timeout: 240_000 };

describe.skipIf(!isRoot)(
  "DATA_DIR and what we keep in it must be ours and no link (finding 8)",
  CHILD,
  () => {
    it("the reproduction: a DATA_DIR owned by another user, with a planted mnemonic and secrets.json, is refused and left untouched", async () => {
      const dataDir = path.join(parent, "planted", "data");
      await mkdir(dataDir, { recursive: true, mode: 0o755 });
      await writeFile(path.join(dataDir, "master-mnemonic"), `${ATTACKER_MNEMONIC}\n`, { mode: 0o644 });
      await writeFile(path.join(dataDir, "secrets.json"), JSON.stringify(ATTACKER_SECRETS), { mode: 0o644 });
      for (const p of [dataDir, path.join(dataDir, "master-mnemonic"), path.join(dataDir, "secrets.json")])
        await chown(p, NOBODY, NOBODY);
      const before = await owners(dataDir);

      const r = await run(dataDir);
      expectRefused(r, new RegExp(dataDir.replaceAll("/", "\\/")), /owned by uid 65534/);
      // Nothing was created, chmod'ed or written there: the attacker's files are as they were.
      expect(await owners(dataDir)).toEqual(before);
      expect(await readFile(path.join(dataDir, "secrets.json"), "utf8")).toBe(
        JSON.stringify(ATTACKER_SECRETS),
      );
    });

    it("a symlinked mnemonic file is refused (even pointing at a file of ours)", async () => {
      const dataDir = await preparedDataDir("linked-mnemonic");
      const mnemonic = path.join(dataDir, "master-mnemonic");
      const elsewhere = path.join(parent, "linked-mnemonic", "attacker-mnemonic");
      await writeFile(elsewhere, `${ATTACKER_MNEMONIC}\n`, { mode: 0o600 });
      await rm(mnemonic);
      await symlink(elsewhere, mnemonic);
      expectRefused(await run(dataDir), /master-mnemonic/, /symbolic link/);
      expect(await readFile(elsewhere, "utf8")).toBe(`${ATTACKER_MNEMONIC}\n`);
    });

    it("a symlinked secrets.json is refused (a planted JWT_SECRET would forge sessions)", async () => {
      const dataDir = await preparedDataDir("linked-secrets");
      const secrets = path.join(dataDir, "secrets.json");
      const elsewhere = path.join(parent, "linked-secrets", "attacker-secrets.json");
      await writeFile(elsewhere, JSON.stringify(ATTACKER_SECRETS), { mode: 0o600 });
      await chown(elsewhere, NOBODY, NOBODY);
      await rm(secrets);
      await symlink(elsewhere, secrets);
      expectRefused(await run(dataDir), /secrets\.json/, /symbolic link/);
    });

    it("a symlinked DATA_DIR itself is refused, whoever owns its target", async () => {
      const real = await preparedDataDir("linked-dir");
      const link = path.join(parent, "linked-dir", "data-link");
      await symlink(real, link);
      expectRefused(await run(link), /data-link/, /symbolic link/);
      // The target is ours and was fine on its own: it still starts when named directly.
      expect((await run(real)).outcome).toBe("started");
    });

    it("the signer role refuses the same planted DATA_DIR", async () => {
      const dataDir = path.join(parent, "signer", "data");
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
      await writeFile(path.join(dataDir, "master-mnemonic"), `${ATTACKER_MNEMONIC}\n`, { mode: 0o600 });
      await chown(dataDir, NOBODY, NOBODY);
      await chown(path.join(dataDir, "master-mnemonic"), NOBODY, NOBODY);
      expectRefused(await run(dataDir, "signer"), /data/, /owned by uid 65534/);
    });
  },
);

describe.skipIf(!isRoot)(
  "every entry of ours in DATA_DIR is checked at start-up (in process: tightenDataDir)",
  () => {
    it("another user's secrets.json, master-mnemonic, database folder or a file deep in it is refused, and nothing is chmod'ed", async () => {
      const dataDir = await preparedDataDir("foreign-file");
      for (const name of ["secrets.json", "master-mnemonic", "pglite", path.join("pglite", "PG_VERSION")]) {
        const entry = path.join(dataDir, name);
        await chown(entry, NOBODY, NOBODY);
        await chmod(entry, 0o644);
        await expect(tightenDataDir(dataDir, silent), name).rejects.toThrow(
          new RegExp(`${entry.replaceAll("/", "\\/")} is owned by uid 65534`),
        );
        expect((await lstat(entry)).mode & 0o777, `${name} left as it was`).toBe(0o644);
        await chown(entry, 0, 0);
      }
      // All ours again: accepted (and made private again).
      await expect(tightenDataDir(dataDir, silent)).resolves.not.toHaveLength(0);
    });

    it("a symbolic link in place of the lock file, the control socket or inside the database folder is refused", async () => {
      const dataDir = await preparedDataDir("linked-other");
      const target = path.join(parent, "linked-other", "target");
      await mkdir(target);
      for (const name of ["stablegate.lock", "control.sock", "pglite", path.join("pglite", "pg_linked")]) {
        const entry = path.join(dataDir, name);
        const moved = `${entry}.moved`;
        if (name === "pglite") await rename(entry, moved);
        else await rm(entry, { force: true });
        await symlink(target, entry);
        await expect(tightenDataDir(dataDir, silent), name).rejects.toThrow(
          new RegExp(`${entry.replaceAll("/", "\\/")} is a symbolic link`),
        );
        await rm(entry);
        if (name === "pglite") await rename(moved, entry);
      }
      await expect(tightenDataDir(dataDir, silent)).resolves.toEqual([]);
    });

    it("a DATA_DIR owned by another user, or a file in place of it, is refused before anything is created in it", async () => {
      const dataDir = path.join(parent, "unit-dir", "data");
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
      await chown(dataDir, NOBODY, NOBODY);
      await expect(tightenDataDir(dataDir, silent)).rejects.toThrow(/is owned by uid 65534/);
      expect(await readdir(dataDir)).toEqual([]);
      const file = path.join(parent, "unit-dir", "file");
      await writeFile(file, "");
      await expect(tightenDataDir(file, silent)).rejects.toThrow(/is not a directory/);
    });
  },
);

describe.skipIf(!isRoot)("the key files are read without following links, whoever calls the reader", () => {
  const config = (dataDir: string) =>
    parseConfig({
      NODE_ENV: "test",
      DATA_DIR: dataDir,
      PRODUCTION_BASE_URL: "http://a.test",
      SANDBOX_BASE_URL: "http://b.test",
    });

  it("resolveMnemonic refuses a symlinked or foreign generated mnemonic", async () => {
    const dataDir = path.join(parent, "unit-mnemonic");
    await mkdir(dataDir, { mode: 0o700 });
    const elsewhere = path.join(parent, "unit-mnemonic-target");
    await writeFile(elsewhere, `${ATTACKER_MNEMONIC}\n`);
    await symlink(elsewhere, path.join(dataDir, "master-mnemonic"));
    await expect(resolveMnemonic(config(dataDir))).rejects.toThrow(/symbolic link/);
    await rm(path.join(dataDir, "master-mnemonic"));
    await writeFile(path.join(dataDir, "master-mnemonic"), `${ATTACKER_MNEMONIC}\n`, { mode: 0o600 });
    await chown(path.join(dataDir, "master-mnemonic"), NOBODY, NOBODY);
    await expect(resolveMnemonic(config(dataDir))).rejects.toThrow(/owned by uid 65534/);
  });

  it("resolveSecrets refuses a symlinked or foreign secrets.json, and never writes through a link", async () => {
    const dataDir = path.join(parent, "unit-secrets");
    await mkdir(dataDir, { mode: 0o700 });
    const elsewhere = path.join(parent, "unit-secrets-target");
    await writeFile(elsewhere, "{}");
    await symlink(elsewhere, path.join(dataDir, "secrets.json"));
    await expect(resolveSecrets(config(dataDir))).rejects.toThrow(/symbolic link/);
    // A write would have gone through the link: the target is unchanged.
    expect(await readFile(elsewhere, "utf8")).toBe("{}");
    await rm(path.join(dataDir, "secrets.json"));
    await writeFile(path.join(dataDir, "secrets.json"), JSON.stringify(ATTACKER_SECRETS), { mode: 0o600 });
    await chown(path.join(dataDir, "secrets.json"), NOBODY, NOBODY);
    await expect(resolveSecrets(config(dataDir))).rejects.toThrow(/owned by uid 65534/);
  });
});
