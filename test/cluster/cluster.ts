import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import path from "node:path";
import { mainArgs, runToEnd } from "../support/processes.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

export type ClusterRole = "migrate" | "api" | "worker" | "signer";

/**
 * Which key material the roles get: "xpubs" — docs/decisions/custody-and-faults.md#key-custody: only the signer holds the
 * mnemonic; `api` and `worker` derive addresses from the account xpubs that
 * `stablegate signer export-xpubs` prints, `migrate` needs none, and in production mode each
 * refuses the mnemonic. ("mnemonic": every role got it, as before that change.)
 */
const KEY_MATERIAL: "mnemonic" | "xpubs" = "xpubs";

function keyMaterial(role: ClusterRole, s: ClusterSettings): Record<string, string> {
  if (role === "signer" || KEY_MATERIAL === "mnemonic") return { MASTER_MNEMONIC: s.mnemonic };
  if (role === "migrate") return {};
  if (!s.xpubs) throw new Error(`no MASTER_XPUBS for the ${role} role yet (run export-xpubs first)`);
  return { MASTER_XPUBS: s.xpubs };
}

/** Everything the cluster's processes share; one value per test run. */
export interface ClusterSettings {
  databaseUrl: string;
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  /** Each process gets a DATA_DIR of its own below this folder. */
  dataDir: string;
  receiverPort: number;
  mnemonic: string;
  /** `MASTER_XPUBS` of `mnemonic` (the line `stablegate signer export-xpubs` prints). */
  xpubs: string | undefined;
  secretEncryptionKey: string;
  jwtSecret: string;
  metricsToken: string;
  internalSharedSecret: string;
  feeSchedule: string;
  /** Limits of every rate-limit tier: high enough that the load from one IP is never limited. */
  rateLimit: number;
  /** Added to every role's environment (e.g. the chains' providers, `SIGNER_URL`). */
  extraEnv?: Record<string, string>;
}

/**
 * The one place where a cluster process's environment is built: a clean environment (never the
 * test runner's), production mode, the shared database and Redis, and per role only what that
 * role may hold — `INTERNAL_SHARED_SECRET` in `worker` only (the api role refuses it in production
 * mode), the key material of `KEY_MATERIAL`.
 */
export function roleEnv(role: ClusterRole, name: string, s: ClusterSettings): Record<string, string> {
  const limits = String(s.rateLimit);
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    NODE_ENV: "production",
    LOG_LEVEL: "info",
    HOST: "127.0.0.1",
    PORT: "0",
    SANDBOX_PORT: "0",
    PRODUCTION_BASE_URL: "https://api.cluster.stablegate.test",
    SANDBOX_BASE_URL: "https://sandbox.cluster.stablegate.test",
    DATA_DIR: path.join(s.dataDir, name),
    DATABASE_URL: s.databaseUrl,
    // Four processes (and the listeners) on a server other test files use too.
    DATABASE_POOL_SIZE: "5",
    ...(s.redisUrl ? { REDIS_URL: s.redisUrl } : {}),
    REDIS_KEY_PREFIX: s.redisKeyPrefix,
    SECRET_ENCRYPTION_KEY: s.secretEncryptionKey,
    JWT_SECRET: s.jwtSecret,
    METRICS_TOKEN: s.metricsToken,
    FEE_SCHEDULE: s.feeSchedule,
    // The test's receiver listens on 127.0.0.1 (a private address: allowed by this range only).
    SSRF_ALLOW_CIDRS: "127.0.0.1/32",
    WEBHOOK_ALLOWED_PORTS: String(s.receiverPort),
    // Seconds, not the production schedule's hours: a delivery lost to a SIGKILL is retried in the test's time.
    WEBHOOK_RETRY_SCHEDULE: "1,1,2,3,5",
    WEBHOOK_TIMEOUT_MS: "3000",
    // A claim of a SIGKILLed api is taken over after this (default 120 s, longer than the test).
    IDEMPOTENCY_LEASE_SECONDS: "10",
    RATE_LIMIT_AUTH: limits,
    RATE_LIMIT_FINANCIAL: limits,
    RATE_LIMIT_WALLET: limits,
    RATE_LIMIT_STANDARD: limits,
    RATE_LIMIT_DASHBOARD: limits,
    RATE_LIMIT_PUBLIC_PAGE: limits,
    ...(role === "worker" || role === "signer" ? { INTERNAL_SHARED_SECRET: s.internalSharedSecret } : {}),
    // The signer refuses to start in production mode without its outflow cap (issue #34): far above this run's flows.
    ...(role === "signer"
      ? { SIGNER_MAX_OUTFLOW_PER_HOUR: "10000000", SIGNER_MAX_OUTFLOW_PER_DAY: "10000000" }
      : {}),
    ...keyMaterial(role, s),
    ...s.extraEnv,
  };
}

/**
 * `stablegate signer export-xpubs` as an operator runs it on the signer host (the signer's
 * environment, the mnemonic): the `MASTER_XPUBS` value for the api and worker hosts.
 */
export async function exportXpubs(s: ClusterSettings): Promise<string> {
  const r = await runToEnd("signer export-xpubs", ["signer", "export-xpubs"], roleEnv("signer", "signer", s));
  const line = /^MASTER_XPUBS=(\S+)$/m.exec(r.stdout);
  if (r.code === 0 && line?.[1]) return line[1];
  throw new Error(`signer export-xpubs exited ${r.code}: ${(r.stdout + r.stderr).slice(-2000)}`);
}

/** One OS process of the cluster: `node src/main.ts <role>` (bundled: mainArgs), its log in a file. */
export class ClusterProcess {
  readonly child: ChildProcess;
  readonly startedAt = Date.now();
  /** Set when the test kills it on purpose (any other exit is a crash). */
  killedByTest = false;
  /** The api's listener ports, once it logged "stablegate listening". */
  ports: { production: number; sandbox: number } | undefined;
  /** Log lines at warn level or above (and whatever is not JSON, e.g. a fatal stack on stderr). */
  readonly problems: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly log: WriteStream;
  private readonly waiters: { test: (line: string) => boolean; resolve: () => void }[] = [];

  constructor(
    readonly name: string,
    readonly role: ClusterRole,
    env: Record<string, string>,
    readonly logFile: string,
  ) {
    this.log = createWriteStream(logFile, { flags: "a" });
    // `node` itself (not the tsx binary, which runs the program in a child that a SIGKILL of the
    // parent would orphan): the signal must hit the role itself (test/cli.test.ts).
    this.child = spawn(process.execPath, [...mainArgs(), role], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        this.log.end();
        resolve({ code, signal });
      }),
    );
    for (const stream of [this.child.stdout, this.child.stderr]) {
      let partial = "";
      stream?.on("data", (chunk: Buffer) => {
        this.log.write(chunk);
        const lines = (partial + chunk.toString("utf8")).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) this.onLine(line);
      });
    }
  }

  private onLine(line: string) {
    if (line.trim() === "") return;
    let parsed: { level?: number; msg?: string; sandbox?: string; production?: string } | undefined;
    try {
      parsed = JSON.parse(line);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.level ?? 0) >= 40) this.problems.push(line.slice(0, 2000));
    if (parsed?.msg === "stablegate listening" && parsed.sandbox && parsed.production) {
      this.ports = {
        production: Number(new URL(parsed.production).port),
        sandbox: Number(new URL(parsed.sandbox).port),
      };
    }
    for (const w of [...this.waiters]) {
      if (w.test(line)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves at the first log line `test` accepts; rejects if the process exits first or on timeout. */
  waitForLine(test: (line: string) => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`${this.name}: no such log line within ${timeoutMs} ms (log ${this.logFile})`)),
        timeoutMs,
      );
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push({ test, resolve: done });
      void this.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(
          new Error(
            `${this.name} exited (${code ?? signal}) before it was ready: ${this.problems.slice(-5).join("\n")} (log ${this.logFile})`,
          ),
        );
      });
    });
  }

  /** An api is ready once it listens. */
  async listening(timeoutMs: number): Promise<{ production: number; sandbox: number }> {
    if (!this.ports) await this.waitForLine((l) => l.includes('"stablegate listening"'), timeoutMs);
    return this.ports as { production: number; sandbox: number };
  }

  kill(signal: NodeJS.Signals): void {
    this.killedByTest = true;
    if (this.running) this.child.kill(signal);
  }

  /** Graceful stop (SIGTERM), SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    if (!this.running) return;
    this.killedByTest = true;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
