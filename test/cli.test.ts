import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/harness.js";
import { mainArgs, runToEnd } from "./support/processes.js";

const ROOT = path.resolve(import.meta.dirname, "..");
/**
 * The CLI as node running `src/main.ts` (bundled: mainArgs) — not the `tsx` binary, which runs the
 * program in a child and, on SIGTERM, kills that child outright (exit 143) when it has not
 * acknowledged the signal within 30 ms, as happens under load; the graceful stop is what is tested.
 */

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "sg-cli-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

function env(extra: Record<string, string> = {}) {
  // A clean environment: only what the CLI needs, never the test runner's database settings.
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATA_DIR: dataDir,
    LOG_LEVEL: "info",
    PORT: "0",
    SANDBOX_PORT: "0",
    PRODUCTION_BASE_URL: "http://api.stablegate.test",
    SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
    ...extra,
  };
}

function run(args: string[], extra: Record<string, string> = {}) {
  return runToEnd("stablegate", args, env(extra));
}

function startServe(): Promise<{
  child: ChildProcess;
  ports: { production: number; sandbox: number };
  log: () => string;
}> {
  const child = spawn(process.execPath, [...mainArgs(), "serve"], { env: env(), cwd: ROOT });
  let out = "";
  child.stderr?.on("data", (c) => {
    out += c;
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (c) => {
      out += c;
      const line = out.split("\n").find((l) => l.includes('"stablegate listening"'));
      if (line) {
        const { production, sandbox } = JSON.parse(line) as { production: string; sandbox: string };
        resolve({
          child,
          ports: { production: Number(new URL(production).port), sandbox: Number(new URL(sandbox).port) },
          log: () => out,
        });
      }
    });
    child.on("exit", (code) => reject(new Error(`serve exited early (${code}): ${out}`)));
  });
}

// Every step starts `tsx src/main.ts` (TypeScript compiled at start-up): seconds per process on a
// busy 2-core machine running other test files, so these tests get more time than the default.
const CLI_TIMEOUT = { timeout: 120_000 };

describe("stablegate command line", CLI_TIMEOUT, () => {
  it("merchant create on a fresh embedded data folder prints one key pair per environment", async () => {
    const r = await run([
      "merchant",
      "create",
      "--email",
      "first@example.com",
      "--company",
      "First Ltd",
      "--json",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const created = JSON.parse(r.stdout);
    expect(created.id).toMatch(/^mer_/);
    expect(created.keys.map((k: { environment: string }) => k.environment)).toEqual([
      "production",
      "sandbox",
    ]);
    expect(created.keys[0].apiKey).toMatch(/^ak_live_/);
    expect(created.keys[0].apiSecret).toMatch(/^sk_live_/);
    expect(created.keys[1].apiKey).toMatch(/^ak_test_/);
  });

  it("refuses bad input and a taken e-mail with a clear message and exit code 2", async () => {
    const bad = await run(["merchant", "create", "--email", "nope", "--company", "X"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/email: must be an e-mail address/);
    const dup = await run(["merchant", "create", "--email", "FIRST@example.com", "--company", "X"]);
    expect(dup.code).toBe(2);
    expect(dup.stderr).toMatch(/email: is already registered/);
  });

  it("names the bad variable at start-up", async () => {
    const r = await run(["serve"], { RATE_LIMIT_AUTH: "lots" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/RATE_LIMIT_AUTH/);
  });

  it("config check: OK in one line; a bad variable named with exit 2", async () => {
    const ok = await run(["config", "check"]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^configuration OK: development mode, embedded PGlite in /);
    const bad = await run(["config", "check"], { RATE_LIMIT_AUTH: "lots" });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/RATE_LIMIT_AUTH/);
    const prod = await run(["config", "check"], { NODE_ENV: "production" });
    expect(prod.code).toBe(2);
    expect(prod.stderr).toMatch(/JWT_SECRET: required in production mode/);
  });

  it("npm start checks the configuration before building anything", async () => {
    const state = path.join(ROOT, "dist", ".build-state.json");
    const before = existsSync(state) ? readFileSync(state, "utf8") : undefined;
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [path.join(ROOT, "scripts", "start.mjs")],
        { env: env({ RATE_LIMIT_AUTH: "lots" }), cwd: ROOT, timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr }),
      );
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/RATE_LIMIT_AUTH/);
    expect(r.stdout).not.toMatch(/building/);
    expect(existsSync(state) ? readFileSync(state, "utf8") : undefined).toBe(before);
  });

  it("a port in use is one line naming the port and the variable, exit 2, no stack trace", async () => {
    const taken = net.createServer();
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, "127.0.0.1", () => resolve((taken.address() as net.AddressInfo).port)),
    );
    const other = await mkdtemp(path.join(tmpdir(), "sg-cli-port-"));
    try {
      const r = await run(["serve"], { DATA_DIR: other, SANDBOX_PORT: String(port), HOST: "127.0.0.1" });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `stablegate: port ${port} on 127.0.0.1 \\(the sandbox listener\\) is in use .*SANDBOX_PORT`,
        ),
      );
      expect(r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      taken.close();
      await rm(other, { recursive: true, force: true });
    }
  });

  it("refuses the api and worker roles on the single-process embedded database", async () => {
    for (const role of ["api", "worker"]) {
      const r = await run([role]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/needs DATABASE_URL/);
    }
  });

  it("serves on embedded defaults, routes operator commands through the running service, stops on SIGTERM", async () => {
    const serve = await startServe();
    try {
      // A second server on the same data folder is refused.
      const second = await run(["serve"]);
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(/DATA_DIR is in use/);

      const r = await run([
        "merchant",
        "create",
        "--email",
        "live@example.com",
        "--company",
        "Live Co",
        "--json",
      ]);
      expect(r.code).toBe(0);
      const created = JSON.parse(r.stdout);
      const sandbox = created.keys.find((k: { environment: string }) => k.environment === "sandbox");
      const account = await call(`http://127.0.0.1:${serve.ports.sandbox}`, "/api/v1/public/account", {
        headers: { apikey: sandbox.apiKey, "x-api-secret": sandbox.apiSecret },
      });
      expect(account.status).toBe(200);
      expect(account.body.data.clientId).toBe(created.id);
      expect(serve.log()).toContain('"command":"merchant.create"');

      // A rescan (issue #22) runs in the service, on the chain it watches (the sandbox simulator).
      const rescan = await run([
        "chain",
        "rescan",
        "--network",
        "USDT-TRC20",
        "--environment",
        "sandbox",
        "--from",
        "0",
        "--to",
        "0",
      ]);
      expect(rescan.stderr).toBe("");
      expect(rescan.code).toBe(0);
      expect(rescan.stdout).toMatch(
        /^USDT-TRC20 sandbox: blocks 0\.\.0 \(1\) re-read; 0 transfer\(s\) to watched addresses/,
      );
      expect(serve.log()).toContain('"command":"chain.rescan"');
      const above = await run([
        "chain",
        "rescan",
        "--network",
        "USDT-TRC20",
        "--environment",
        "sandbox",
        "--from",
        "0",
        "--to",
        "50000",
      ]);
      expect(above.code).toBe(2);
      expect(above.stderr).toMatch(/to: is above the chain's head block/);

      // Reserves (issue #22): the table of every custodial chain, through the service.
      const reserves = await run(["chain", "reconcile"]);
      expect(reserves.stderr).toBe("");
      expect(reserves.code).toBe(0);
      expect(reserves.stdout).toMatch(/^chain +hot wallet +gas tank/);
      // Embedded defaults: the sandbox simulator only, which holds no custody.
      expect(reserves.stdout).toMatch(/\nno chain holds custody here \(only the sandbox simulator\)/);
      const badTolerance = await run(["chain", "reconcile", "--tolerance", "-1"]);
      expect(badTolerance.code).toBe(2);
    } finally {
      const exited = new Promise<number | null>((resolve) => serve.child.on("exit", (code) => resolve(code)));
      serve.child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
    expect(serve.log()).toContain('"msg":"stopped"');
    expect(existsSync(path.join(dataDir, "stablegate.lock"))).toBe(false);
    // The data persisted: the merchant created through the service is there after restart.
    const again = await run(["merchant", "create", "--email", "live@example.com", "--company", "Again"]);
    expect(again.stderr).toMatch(/already registered/);
  });
});

describe("stablegate ledger verify", CLI_TIMEOUT, () => {
  it("reports a sound ledger with exit 0", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "sg-cli-ledger-"));
    try {
      const r = await run(["ledger", "verify"], { DATA_DIR: dir });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/0 postings.*\nOK: every posting balances/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
