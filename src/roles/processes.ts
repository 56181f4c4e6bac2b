import { coldWalletOf } from "../config/chains.js";
import { type Config, ConfigError } from "../config/config.js";
import { keyMaterialForRole } from "../config/key-custody.js";
import { configForRole } from "../config/secrets.js";
import { migrate, pendingMigrations } from "../db/migrate.js";
import { type RetryPolicy, retryTransient } from "../db/transient.js";
import { type BuildAppOptions, buildApp } from "../http/app.js";
import type { App } from "../http/app-types.js";
import { type Listeners, ListenPortError, listen } from "../http/listeners.js";
import { devOutboxKey } from "../mail/index.js";
import { createProcessLogger, type Logger } from "../observability/logger.js";
import { startControlServer } from "../operator/control-server.js";
import { createRuntime, openRoleDatabase, type Runtime, type RuntimeOptions } from "../runtime.js";
import { accountXpubsOf, pinAccountKeys } from "../wallet/index.js";
import { tightenDataDir } from "./data-dir.js";
import { StartupError } from "./startup-error.js";
import { startWorker } from "./worker.js";

export type Role = "serve" | "api" | "worker" | "migrate";
export const ROLES: readonly Role[] = ["serve", "api", "worker", "migrate"];
/** The roles that run a service (`migrate` runs `runMigrations` and exits). */
export type ServiceRole = Exclude<Role, "migrate">;

/**
 * `stablegate migrate`: applies the migrations and returns. It holds no key material (docs/decisions/custody-and-faults.md#key-custody:
 * in production mode it refuses the mnemonic) and builds no runtime: the database is all it needs.
 */
export async function runMigrations(
  configured: Config,
  options: { logger?: Logger } = {},
): Promise<string[]> {
  const { config } = configForRole(configured, "migrate");
  keyMaterialForRole(config, "migrate");
  const logger = options.logger ?? createProcessLogger(config);
  await tightenDataDir(config.dataDir, logger);
  const opened = await openRoleDatabase(config, "migrate");
  try {
    const { applied, functions } = await migrate(opened.database.db);
    const changed = applied.length + functions.length > 0;
    logger.info({ applied, functions }, changed ? "migrations applied" : "schema up to date");
    return applied;
  } finally {
    await opened.close();
  }
}

export interface RunningProcess {
  role: Role;
  runtime: Runtime;
  app: App | undefined;
  listeners: Listeners | undefined;
  /** Graceful stop: stop accepting, finish in-flight requests and jobs, close pools. */
  stop(): Promise<void>;
}

export interface StartOptions extends Omit<RuntimeOptions, "role"> {
  app?: BuildAppOptions;
}

/** Start-up statements: six attempts over about 15 s (long enough for a failover). */
const STARTUP_RETRY_POLICY: RetryPolicy = { attempts: 6, baseDelayMs: 500 };

/**
 * Starts a process role. `serve` = migrate + API + worker in one process (the default);
 * `api` and `worker` scale out on PostgreSQL and refuse an unmigrated schema; `migrate` applies
 * migrations and returns.
 */
export async function startRole(
  role: ServiceRole,
  configured: Config,
  options: StartOptions = {},
): Promise<RunningProcess> {
  // docs/decisions/security.md: only serve and worker (and the signer) hold INTERNAL_SHARED_SECRET.
  const { config, ignored } = configForRole(configured, role);
  if ((role === "api" || role === "worker") && !config.database.url && !options.database) {
    throw new StartupError(
      `the ${role} role needs DATABASE_URL: the embedded database (PGlite) serves a single process, so ` +
        "run `serve` on embedded defaults or point every process at one PostgreSQL",
    );
  }
  const logger = options.logger ?? createProcessLogger(config);
  if (ignored)
    logger.warn(
      { role },
      "INTERNAL_SHARED_SECRET is set but the api role never calls the signer: ignored (production mode refuses to start with it)",
    );
  // Before anything is written there (generated secrets, the embedded database, the lock).
  await tightenDataDir(config.dataDir, logger);
  const runtime = await createRuntime(config, { ...options, logger, role });
  const log = runtime.logger;
  try {
    const db = runtime.database.db;
    // The start-up checks ride out a transient database fault (a failover, a terminated backend:
    // the cluster fault test of issue #38 saw a worker die starting at that moment).
    const retried = <T>(what: string, attempt: () => Promise<T>) =>
      retryTransient(attempt, STARTUP_RETRY_POLICY, (err, next) =>
        log.warn({ err, attempt: next }, `${what}: transient database fault, trying again`),
      );
    if (role === "serve") {
      const { applied, functions } = await migrate(db);
      if (applied.length + functions.length > 0) log.info({ applied, functions }, "migrations applied");
    } else {
      const pending = await retried("schema check", () => pendingMigrations(db));
      if (pending.length > 0) {
        throw new Error(
          `the database schema is behind this build (${pending.join(", ")}); run \`stablegate migrate\``,
        );
      }
    }
    // Every process derives addresses from the same account keys, or it does not start.
    const differ = await retried("account keys check", () =>
      pinAccountKeys(db, accountXpubsOf(runtime.addressDeriver)),
    );
    if (differ.length > 0) {
      throw new ConfigError([
        {
          variable: runtime.accountKeysSource === "MASTER_XPUBS" ? "MASTER_XPUBS" : "MASTER_MNEMONIC",
          message:
            `the account keys of this process (${runtime.accountKeysSource}) differ from the ones this database's ` +
            `addresses were derived from (${differ.join(", ")}): its addresses would be ones the signer cannot spend. ` +
            "Give every process the keys of the one signer (`stablegate signer export-xpubs`).",
        },
      ]);
    }
    log.info({ role, accountKeys: runtime.accountKeysSource }, "account keys checked against the database");

    let app: App | undefined;
    let listeners: Listeners | undefined;
    if (role === "serve" || role === "api") {
      app = await buildApp(runtime, options.app);
      listeners = await listen(app, config.http.host, {
        production: config.http.port,
        sandbox: config.http.sandboxPort,
      }).catch((err: unknown) => {
        // A port in use is one line for the operator (`main.ts`: exit 2), not a stack trace.
        throw err instanceof ListenPortError ? new StartupError(err.message, { cause: err }) : err;
      });
      log.info(
        {
          production: `http://${config.http.host}:${listeners.ports.production}`,
          sandbox: `http://${config.http.host}:${listeners.ports.sandbox}`,
        },
        "stablegate listening",
      );
      if (!config.production && process.stderr.isTTY)
        process.stderr.write(developmentBanner(config, devOutboxKey(runtime.secrets.JWT_SECRET)));
    }
    const worker = role === "serve" || role === "worker" ? startWorker(runtime, role) : undefined;
    const control = runtime.controlSocket
      ? await startControlServer(
          runtime.controlSocket,
          {
            db,
            clock: runtime.clock,
            chains: () => runtime.chains,
            addresses: async () => runtime.addressDeriver,
            coldWallet: (n, e) => coldWalletOf(config.chains, n, e)?.address,
          },
          log,
        )
      : undefined;

    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        log.info({ role }, "shutting down");
        await listeners?.close(config.shutdownTimeoutMs);
        await app?.close();
        await worker?.stop();
        await control?.close();
        await runtime.close();
        log.info({ role }, "stopped");
      })();
      return stopping;
    };
    return { role, runtime, app, listeners, stop };
  } catch (err) {
    await runtime.close();
    throw err;
  }
}

/**
 * What a developer needs after `npm start`, in words (issue #35): where the dashboard is, how to
 * get keys, the docs and the mail outbox. Outside production mode and on a terminal only; the log
 * lines stay JSON for machines.
 */
function developmentBanner(config: Config, outboxKey: string): string {
  const sandbox = config.http.sandboxBaseUrl;
  const production = config.http.productionBaseUrl;
  const docs =
    config.docs.user && config.docs.password
      ? `${sandbox}/docs`
      : "set DOCS_USER and DOCS_PASSWORD to open /docs";
  return [
    "",
    "  stablegate is running (development mode)",
    `  Dashboard, sandbox:     ${sandbox}/   sign up, then "API keys" for your sandbox pair`,
    `  Dashboard, production:  ${production}/`,
    `  API reference:          ${docs}`,
    `  Your mail (codes):      ${sandbox}/mail  (the local outbox: no mail leaves this machine)`,
    `  Everyone's mail:        ${sandbox}/dev/mail?key=${outboxKey}  (invites, resets; this machine only)`,
    "  Stop with Ctrl-C.",
    "",
    "",
  ].join("\n");
}
