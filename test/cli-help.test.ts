import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runToEnd } from "./support/processes.js";

// The real CLI as an OS process (test/support/processes.ts): node running `src/main.ts` through tsx's loader.

/** The operator commands and the options each one's usage must name. */
const COMMANDS: Record<string, string[]> = {
  "merchant create": ["--email", "--company", "--password-stdin", "--json"],
  "mail list": ["--to", "--limit", "--json"],
  "config check": [],
  "admin create": ["--email", "--password-stdin"],
  "ledger verify": ["--json"],
  "chain costs": ["--months", "--json"],
  "signer export-xpubs": [],
  backup: ["--output", "--include-secrets", "--passphrase-file", "--passphrase-stdin", "--json"],
  restore: [
    "--input",
    "--passphrase-file",
    "--passphrase-stdin",
    "--wipe",
    "--env-file",
    "--dry-run",
    "--json",
  ],
};
const ROLES = ["serve", "api", "worker", "migrate", "signer"];

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "sg-cli-help-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

function run(args: string[], extra: Record<string, string> = {}) {
  // A clean environment, never the test runner's database settings. Outside production the
  // configuration would generate DATA_DIR/secrets.json, so an empty DATA_DIR at the end shows that
  // neither help nor a refused command line loaded the configuration or opened a database.
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATA_DIR: dataDir,
    ...extra,
  };
  // A role that ignores its arguments (the old behaviour) would start and run on: never leave it.
  return runToEnd("stablegate", args, env, 60_000);
}

/** A stack frame line of a thrown error (`    at parseArgs (node:internal/…)`). */
const STACK_FRAME = /^\s+at /m;

/** A refused command line: exit 2, one line on stderr naming the command, nothing on stdout. */
function expectOneLineError(r: { code: number | null; stdout: string; stderr: string }, pattern: RegExp) {
  expect(r.stderr).not.toMatch(STACK_FRAME);
  expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(r.stderr).toMatch(/^stablegate: /);
  expect(r.stderr.trimEnd()).toMatch(pattern);
  expect(r.stdout).toBe("");
  expect(r.code).toBe(2);
}

// Each spawn compiles main.ts with tsx: seconds on a busy 2-core machine. The cases are
// independent, so they run concurrently.
describe.concurrent("stablegate --help and refused command lines", { timeout: 120_000 }, () => {
  for (const [command, options] of Object.entries(COMMANDS)) {
    for (const flag of ["--help", "-h"]) {
      it(`${command} ${flag} prints its usage on stdout, exit 0`, async () => {
        const r = await run([...command.split(" "), flag]);
        expect(r.stderr).toBe("");
        expect(r.code).toBe(0);
        expect(r.stdout).toMatch(new RegExp(`^usage: stablegate ${command}\\b`));
        for (const option of options) expect(r.stdout).toContain(option);
        expect(r.stdout).toContain("--help");
      });
    }

    it(`${command} with an unknown option: one line, exit 2`, async () => {
      const r = await run([...command.split(" "), "--jsn"]);
      expectOneLineError(
        r,
        new RegExp(`^stablegate: ${command}: unknown option --jsn \\(see stablegate ${command} --help\\)$`),
      );
    });

    it(`${command} with an unexpected argument: one line, exit 2`, async () => {
      const r = await run([...command.split(" "), "extra"]);
      expectOneLineError(r, new RegExp(`^stablegate: ${command}: unexpected argument "extra"`));
    });
  }

  it("--help wins over other mistakes on the same line", async () => {
    const r = await run(["ledger", "verify", "--jsn", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: stablegate ledger verify/);
  });

  it("an option without its value is one line, exit 2", async () => {
    for (const args of [
      ["merchant", "create", "--company", "X", "--email"],
      ["merchant", "create", "--email", "--company", "X"],
      ["admin", "create", "--email"],
    ]) {
      expectOneLineError(
        await run(args),
        /: missing value for --email \(see stablegate \w+ create --help\)$/,
      );
    }
  });

  it("a value given to a flag that takes none is one line, exit 2", async () => {
    expectOneLineError(await run(["ledger", "verify", "--json=yes"]), /ledger verify: --json takes no value/);
  });

  it("a missing required option is one line, exit 2, before the database is touched", async () => {
    expectOneLineError(
      await run(["merchant", "create", "--company", "X"]),
      /^stablegate: merchant create: missing --email <email> \(see stablegate merchant create --help\)$/,
    );
    expectOneLineError(
      await run(["merchant", "create", "--email", "a@example.com"]),
      /missing --company <name>/,
    );
    expectOneLineError(await run(["admin", "create"]), /^stablegate: admin create: missing --email <email>/);
    // A single-word command (issue #42) is parsed the same way.
    expectOneLineError(
      await run(["backup"]),
      /^stablegate: backup: missing --output <file> \(see stablegate backup --help\)$/,
    );
  });

  for (const args of [["--help"], ["-h"], ["help"]]) {
    it(`stablegate ${args.join(" ")} prints the whole usage, exit 0`, async () => {
      const r = await run(args);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^usage: stablegate/);
      for (const role of ROLES) expect(r.stdout).toContain(`  ${role} `);
      for (const command of Object.keys(COMMANDS)) expect(r.stdout).toContain(command);
    });
  }

  it("stablegate help <command> prints that command's usage", async () => {
    const r = await run(["help", "ledger", "verify"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: stablegate ledger verify/);
  });

  for (const role of ROLES) {
    it(`stablegate ${role} --help prints the role's usage without starting it, exit 0`, async () => {
      const r = await run([role, "--help"]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: stablegate ${role}\\b`));
    });

    it(`stablegate ${role} with an unknown option: one line, exit 2, nothing started`, async () => {
      const r = await run([role, "--port", "8080"]);
      expectOneLineError(
        r,
        new RegExp(`^stablegate: ${role}: unknown option --port \\(see stablegate ${role} --help\\)$`),
      );
    });
  }

  it("an unknown option with no command is one line, exit 2", async () => {
    expectOneLineError(
      await run(["--verbose"]),
      /^stablegate: unknown option --verbose \(see stablegate --help\)$/,
    );
  });

  it("an unknown command still prints the whole usage on stderr, exit 2", async () => {
    for (const args of [["ledger", "frobnicate"], ["ledger"], ["signer", "frobnicate"], ["frobnicate"]]) {
      const r = await run(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(/usage: stablegate/);
      expect(r.stderr).not.toMatch(STACK_FRAME);
    }
  });

  it("--help works in production mode without any secret and with a broken configuration", async () => {
    const broken = { NODE_ENV: "production", RATE_LIMIT_AUTH: "lots", DATABASE_URL: "not a url" };
    for (const args of [
      ...Object.keys(COMMANDS).map((c) => [...c.split(" "), "--help"]),
      ["api", "--help"],
    ]) {
      const r = await run(args, broken);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: stablegate ${args.slice(0, -1).join(" ")}`));
    }
    // The same configuration without --help is refused (so the case above proves something).
    const r = await run(["ledger", "verify"], broken);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/RATE_LIMIT_AUTH/);
  });
});

describe("stablegate --help and refused command lines leave no trace", () => {
  it("nothing was written to DATA_DIR (no configuration loaded, no database opened)", async () => {
    expect(await readdir(dataDir)).toEqual([]);
  });
});
