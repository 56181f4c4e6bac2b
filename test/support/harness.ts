import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import type { DestinationStream } from "pino";
import { type Config, parseConfig } from "../../src/config/config.js";
import type { Database } from "../../src/db/database.js";
import type { App, RouteDeps } from "../../src/http/app-types.js";
import { LATE_AUDIT_RECORD } from "../../src/http/plugins/audit.js";
import type { Clock } from "../../src/lib/clock.js";
import { type CreatedMerchant, createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { type RunningProcess, startRole } from "../../src/roles/processes.js";
import { openTestDatabase } from "./db.js";

export interface TestService {
  config: Config;
  proc: RunningProcess;
  database: Database;
  urls: { production: string; sandbox: string };
  createMerchant(email?: string): Promise<CreatedMerchant>;
  close(): Promise<void>;
}

let seq = 0;

export interface TestServiceOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Share a database between instances (several app instances on one PostgreSQL). */
  database?: Database;
  logDestination?: DestinationStream;
  extraRoutes?: (app: App, deps: RouteDeps) => void;
  role?: "serve" | "api";
}

/** Starts the real service (both listeners on ephemeral ports) on a database of its own. */
const TEST_MNEMONIC = "test test test test test test test test test test test junk";

/** Whether a test's environment chooses the key material itself (or is production mode, which refuses a default). */
function ownsKeyMaterial(env: Record<string, string> = {}): boolean {
  return (
    env.NODE_ENV === "production" ||
    ["MASTER_MNEMONIC", "MASTER_MNEMONIC_FILE", "MASTER_XPUBS"].some((name) => env[name] !== undefined)
  );
}

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "stablegate-test-"));
  const config = parseConfig({
    NODE_ENV: "test",
    PORT: "0",
    SANDBOX_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: options.logDestination ? "info" : "error",
    DATA_DIR: dataDir,
    PRODUCTION_BASE_URL: "http://api.stablegate.test",
    SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
    // One seed for every test service outside production mode, so that several services on one
    // database agree on the account keys it records (a process with other keys refuses to start).
    ...(ownsKeyMaterial(options.env) ? {} : { MASTER_MNEMONIC: TEST_MNEMONIC }),
    ...options.env,
  });
  // Error lines are read for a defect no single test looks for: an audited route that wrote its
  // record after its action's commit (http/plugins/audit.ts); closing the service then fails.
  const late: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      const line = String(chunk);
      if (line.includes(LATE_AUDIT_RECORD)) late.push(line);
      options.logDestination?.write(line);
      done();
    },
  });
  const ownDatabase = options.database ? undefined : await openTestDatabase();
  const database = options.database ?? (ownDatabase as Database);
  const proc = await startRole(options.role ?? "serve", config, {
    database,
    logger: createLogger(config.logLevel, sink),
    ...(options.clock ? { clock: options.clock } : {}),
    app: options.extraRoutes ? { extraRoutes: options.extraRoutes } : {},
  });
  const ports = proc.listeners?.ports as { production: number; sandbox: number };
  return {
    config,
    proc,
    database,
    urls: {
      production: `http://127.0.0.1:${ports.production}`,
      sandbox: `http://127.0.0.1:${ports.sandbox}`,
    },
    createMerchant: (email) =>
      createMerchantWithKeys(database.db, {
        email: email ?? `m${++seq}-${Date.now()}@example.com`,
        companyName: "Test Co",
      }),
    async close() {
      await proc.stop();
      await ownDatabase?.close();
      await rm(dataDir, { recursive: true, force: true });
      if (late.length > 0)
        throw new Error(`an audited route wrote its record after the commit:\n${late.join("")}`);
    },
  };
}

export function keysOf(m: CreatedMerchant, env: "production" | "sandbox") {
  const k = m.keys.find((x) => x.environment === env);
  if (!k) throw new Error(`no ${env} key`);
  return k;
}

export interface Call {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** A raw HTTP request with an explicit Host header (fetch does not let a caller set Host). */
export function callWithHost(base: string, pathname: string, host: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = http.request(base + pathname, { headers: { ...headers, host } }, (res) => {
      let text = "";
      res.on("data", (c) => {
        text += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** A real HTTP request (undici fetch) with a JSON body when given. */
export async function call(
  base: string,
  pathname: string,
  init: { method?: string; headers?: Record<string, string>; json?: unknown; body?: string } = {},
): Promise<Call> {
  const headers: Record<string, string> = { ...init.headers };
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(base + pathname, { method: init.method ?? (body ? "POST" : "GET"), headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}
