import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmptyPostgresDatabase, onPostgres, openTestDatabase } from "../support/db.js";
import { RoleProcess, runToEnd } from "../support/processes.js";

// `stablegate backup` and `stablegate restore` as the operator runs them (real OS processes).
// Embedded: refused while serve holds DATA_DIR; a development DATA_DIR (generated mnemonic and
// secrets) lost entirely comes back from a backup made with --include-secrets. PostgreSQL: a
// database backed up and restored into a new one, the passphrase on standard input.

const ROOT = path.resolve(import.meta.dirname, "../..");
const MAIN = path.join(ROOT, "src", "main.ts");
const PASSPHRASE = "a passphrase for the cli test";

let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "sg-backup-cli-"));
  await writeFile(path.join(work, "passphrase"), `${PASSPHRASE}\n`, { mode: 0o600 });
});
afterAll(() => rm(work, { recursive: true, force: true }));

function env(extra: Record<string, string>) {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    LOG_LEVEL: "warn",
    PORT: "0",
    SANDBOX_PORT: "0",
    PRODUCTION_BASE_URL: "http://api.stablegate.test",
    SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
    ...extra,
  };
}

/** The CLI with `input` on standard input. */
function withStdin(args: string[], environment: Record<string, string>, input: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
      cwd: ROOT,
      env: environment,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe.runIf(!onPostgres)(
  "stablegate backup/restore on the embedded database",
  { timeout: 240_000 },
  () => {
    it("refused while serve runs; a lost DATA_DIR comes back from --include-secrets with the passphrase", async () => {
      const dataDir = path.join(work, "data");
      const e = env({ DATA_DIR: dataDir });
      const archive = path.join(work, "embedded.sgb");
      // serve pins the account keys of the mnemonic it generates into DATA_DIR.
      const serve = new RoleProcess("serve", ["serve"], { ...e, LOG_LEVEL: "info" });
      try {
        await serve.waitForMsg("stablegate listening", 90_000);
        const made = await runToEnd(
          "stablegate",
          ["merchant", "create", "--email", "b@example.com", "--company", "B"],
          e,
        );
        expect(made.code, made.stderr).toBe(0);
        const busy = await runToEnd("stablegate", ["backup", "--output", archive], e);
        expect(busy.code).toBe(2);
        expect(busy.stderr).toMatch(/^stablegate: DATA_DIR is in use by stablegate serve \(pid \d+\)/);
        expect(existsSync(archive)).toBe(false);
        const busyRestore = await runToEnd("stablegate", ["restore", "--input", archive, "--dry-run"], e);
        expect(busyRestore.code).toBe(2);
      } finally {
        await serve.stop();
      }

      const backup = await runToEnd(
        "stablegate",
        [
          "backup",
          "--output",
          archive,
          "--include-secrets",
          "--passphrase-file",
          path.join(work, "passphrase"),
        ],
        e,
      );
      expect(backup.stderr).toBe("");
      expect(backup.code).toBe(0);
      expect(backup.stdout).toMatch(/^Backup written to .*embedded\.sgb/);
      expect(backup.stdout).toMatch(
        /secrets {6}sealed with the passphrase .*DATA_DIR\/secrets\.json, DATA_DIR\/master-mnemonic/,
      );
      const words = await readFile(path.join(dataDir, "master-mnemonic"), "utf8");
      expect((await readFile(archive)).includes(Buffer.from(words.trim()))).toBe(false);

      await rm(dataDir, { recursive: true, force: true });
      // Without the passphrase the generated SECRET_ENCRYPTION_KEY is gone with DATA_DIR: nothing
      // authenticates the backup (nor would the generated mnemonic check the pinned keys).
      const noKeys = await runToEnd("stablegate", ["restore", "--input", archive], e);
      expect(noKeys.code).toBe(2);
      expect(noKeys.stderr).toMatch(/this process has no SECRET_ENCRYPTION_KEY.*nothing was restored/);
      expect(existsSync(dataDir)).toBe(false);

      const restored = await runToEnd(
        "stablegate",
        ["restore", "--input", archive, "--passphrase-file", path.join(work, "passphrase"), "--json"],
        e,
      );
      expect(restored.stderr).toBe("");
      expect(restored.code).toBe(0);
      const report = JSON.parse(restored.stdout);
      expect(report.ok).toBe(true);
      expect(report.ledger.ok).toBe(true);
      expect(report.accountKeys.source).toBe("the backup's master-mnemonic");
      expect(report.secrets.files.sort()).toEqual(["master-mnemonic", "secrets.json"]);
      expect(report.tables.merchants).toBe(1);
      expect(await readFile(path.join(dataDir, "master-mnemonic"), "utf8")).toBe(words);

      // The restored folder holds the merchant made before the backup.
      const again = await runToEnd(
        "stablegate",
        ["merchant", "create", "--email", "b@example.com", "--company", "B"],
        e,
      );
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/already registered/);
    });
  },
);

describe.runIf(onPostgres)("stablegate backup/restore on PostgreSQL", { timeout: 240_000 }, () => {
  it("backs up with the passphrase on standard input and restores into a new database", async () => {
    const source = await openTestDatabase(1);
    const target = await createEmptyPostgresDatabase();
    try {
      const archive = path.join(work, "pg.sgb");
      const e = env({ DATA_DIR: path.join(work, "pgdata"), DATABASE_URL: source.url as string });
      const made = await runToEnd(
        "stablegate",
        ["merchant", "create", "--email", "p@example.com", "--company", "P"],
        e,
      );
      expect(made.code, made.stderr).toBe(0);
      const backup = await withStdin(
        ["backup", "--output", archive, "--include-secrets", "--passphrase-stdin", "--json"],
        e,
        `${PASSPHRASE}\n`,
      );
      expect(backup.stderr).toBe("");
      expect(backup.code).toBe(0);
      const written = JSON.parse(backup.stdout);
      expect(written.manifest.driver).toBe("postgres");
      expect(written.manifest.database.pgDumpVersion).toMatch(/^pg_dump \(PostgreSQL\) \d+/);
      expect(written.manifest.secrets.env).toContain("DATABASE_URL");

      const into = { ...e, DATABASE_URL: target.url };
      const wrong = await withStdin(
        ["restore", "--input", archive, "--passphrase-stdin"],
        into,
        "wrong passphrase!!\n",
      );
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(/^stablegate: restore: wrong passphrase/);
      const restored = await withStdin(
        ["restore", "--input", archive, "--passphrase-stdin"],
        into,
        PASSPHRASE,
      );
      expect(restored.stderr).toBe("");
      expect(restored.code).toBe(0);
      expect(restored.stdout).toMatch(/^Restored the backup of .* into PostgreSQL\./);
      expect(restored.stdout).toMatch(/ledger {7}verified/);
      expect(restored.stdout).toMatch(/\n {4}merchants +1\n/);
      const again = await runToEnd("stablegate", ["restore", "--input", archive], into);
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/the target database is not empty/);
    } finally {
      await source.close();
      await target.drop();
    }
  });
});
