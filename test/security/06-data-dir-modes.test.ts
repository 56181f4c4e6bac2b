import { type ChildProcess, spawn } from "node:child_process";
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Browser } from "../dashboard/support.js";
import { mainArgs } from "../support/processes.js";

// Security issue #18, finding 6: the embedded database (PGlite) wrote its WAL and catalogs 0666
// under a 0755 DATA_DIR, so any local account could read password hashes, outbox OTPs and reset
// tokens, and tamper with the WAL. docs/decisions/security.md: DATA_DIR and everything the service writes in it
// are private to the service's user (directories 0700, files 0600).
//
// The real CLI (`src/main.ts`, bundled: test/support/processes.ts, as test/cli.test.ts runs it) is started by a
// shell with `umask 022`, as an operator's login shell would: the service must not depend on the
// umask it inherits. Always the embedded database, on both CI passes: the finding is about
// PGlite's files, so the child gets a clean environment without DATABASE_URL or REDIS_URL.

const ROOT = path.resolve(import.meta.dirname, "../..");
const PASSWORD = "correct horse battery staple 9";

let parent: string;
beforeAll(async () => {
  parent = await mkdtemp(path.join(tmpdir(), "sg-modes-"));
});
afterAll(() => rm(parent, { recursive: true, force: true }));

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
    RATE_LIMIT_AUTH: "1000",
  };
}

interface Serve {
  child: ChildProcess;
  production: string;
  log: () => string;
}

/** `sh -c 'umask 022; exec node src/main.ts serve'` (bundled: mainArgs), resolved once it listens. */
function startServe(dataDir: string): Promise<Serve> {
  const script = `umask 022; exec "${process.execPath}" ${mainArgs()
    .map((a) => `"${a}"`)
    .join(" ")} serve`;
  const child = spawn("/bin/sh", ["-c", script], { env: env(dataDir), cwd: ROOT });
  let out = "";
  child.stderr?.on("data", (c) => {
    out += c;
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (c) => {
      out += c;
      const line = out.split("\n").find((l) => l.includes('"stablegate listening"'));
      if (line) {
        const { production } = JSON.parse(line) as { production: string };
        resolve({ child, production: `http://127.0.0.1:${new URL(production).port}`, log: () => out });
      }
    });
    child.on("exit", (code) => reject(new Error(`serve exited early (${code}): ${out}`)));
  });
}

async function stop(s: Serve): Promise<number | null> {
  // The CLI installs its signal handlers once the role has started: one request proves it has.
  expect((await fetch(`${s.production}/healthz`)).status).toBe(200);
  const exited = new Promise<number | null>((resolve) => s.child.once("exit", (code) => resolve(code)));
  s.child.kill("SIGTERM");
  return exited;
}

interface Entry {
  path: string;
  kind: "dir" | "file" | "symlink" | "socket" | "other";
  mode: number;
}

/** Every entry under `root` (root included), by lstat: symlinks are reported, never followed. */
async function walk(root: string): Promise<Entry[]> {
  const out: Entry[] = [];
  const visit = async (p: string) => {
    const s = await lstat(p);
    const kind = s.isDirectory()
      ? "dir"
      : s.isFile()
        ? "file"
        : s.isSymbolicLink()
          ? "symlink"
          : s.isSocket()
            ? "socket"
            : "other";
    out.push({ path: path.relative(root, p) || ".", kind, mode: s.mode & 0o777 });
    if (kind === "dir") for (const name of await readdir(p)) await visit(path.join(p, name));
  };
  await visit(root);
  return out;
}

/** What is not private: a directory other than 0700, a file or socket other than 0600, any symlink. */
function exposed(entries: Entry[]): string[] {
  return entries
    .filter((e) =>
      e.kind === "dir"
        ? e.mode !== 0o700
        : e.kind === "file" || e.kind === "socket"
          ? e.mode !== 0o600
          : true,
    )
    .map((e) => `${e.kind} ${e.mode.toString(8)} ${e.path}`);
}

const CHILD_TIMEOUT = { timeout: 180_000 };

describe("DATA_DIR is private to the service's user (finding 6)", CHILD_TIMEOUT, () => {
  it("a fresh DATA_DIR, PGlite's files, secrets, mnemonic, lock and control socket: dirs 0700, files 0600", async () => {
    const dataDir = path.join(parent, "fresh", "data");
    await mkdir(path.dirname(dataDir), { recursive: true });
    const serve = await startServe(dataDir);
    let running: Entry[];
    try {
      // Data the finding is about: a password hash and an OTP in the mail outbox.
      const b = new Browser(serve.production);
      const reg = await b.req("/api/v1/auth/register", {
        json: { email: "modes@example.com", password: PASSWORD, companyName: "Modes" },
      });
      expect(reg.status).toBe(201);
      expect((await b.req("/api/v1/auth/otp", { json: { purpose: "payout" } })).status).toBe(200);
      const mail = await b.req("/api/v1/dashboard/dev/mail");
      expect(mail.body.data[0].subject).toMatch(/code: \d{6}$/);

      running = await walk(dataDir);
    } finally {
      expect(await stop(serve)).toBe(0);
    }
    // While it runs: the lock file and the control socket are there too.
    const byPath = new Map(running.map((e) => [e.path, e]));
    expect(byPath.get("stablegate.lock")?.kind).toBe("file");
    expect(byPath.get("control.sock")?.kind).toBe("socket");
    expect(byPath.get("secrets.json")?.kind).toBe("file");
    expect(byPath.get("master-mnemonic")?.kind).toBe("file");
    expect(running.filter((e) => e.path.startsWith("pglite/")).length).toBeGreaterThan(100);
    expect(exposed(running)).toEqual([]);

    // Stopped: everything left behind (PGlite's WAL, catalogs, relation files) is private.
    const after = await walk(dataDir);
    expect(after.some((e) => e.path.startsWith("pglite/pg_wal/") && e.kind === "file")).toBe(true);
    expect(exposed(after)).toEqual([]);
  });

  it("a DATA_DIR left 0755 with 0644/0666 files by an older version is tightened at start-up, and the log says so", async () => {
    const dataDir = path.join(parent, "old", "data");
    await mkdir(dataDir, { recursive: true });
    // A first run makes the PGlite tree; then everything is loosened as an older version left it.
    const first = await startServe(dataDir);
    expect(await stop(first)).toBe(0);
    for (const e of await walk(dataDir)) {
      const p = path.join(dataDir, e.path);
      if (e.kind === "dir") await chmod(p, 0o755);
      else if (e.kind === "file") await chmod(p, e.path.startsWith("pglite/") ? 0o666 : 0o644);
    }
    await writeFile(path.join(dataDir, "pglite", "stray-from-an-old-version"), "x", { mode: 0o666 });
    await chmod(path.join(dataDir, "pglite", "stray-from-an-old-version"), 0o666);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o755);

    const serve = await startServe(dataDir);
    const running = await walk(dataDir);
    expect(await stop(serve)).toBe(0);
    expect(serve.log()).toMatch(/"msg":"DATA_DIR was accessible to other users; made it private/);
    expect(exposed(running)).toEqual([]);
    expect(exposed(await walk(dataDir))).toEqual([]);
  });
});
