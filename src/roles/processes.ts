import type { Config } from "../config/config.js";
import { configForRole } from "../config/secrets.js";
import { migrate, pendingMigrations } from "../db/migrate.js";
import { type BuildAppOptions, buildApp } from "../http/app.js";
import type { App } from "../http/app-types.js";
import { type Listeners, listen } from "../http/listeners.js";
import { createLogger } from "../observability/logger.js";
import { startControlServer } from "../operator/control-server.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime.js";
import { tightenDataDir } from "./data-dir.js";
import { StartupError } from "./startup-error.js";
import { startWorker } from "./worker.js";

export type Role = "serve" | "api" | "worker" | "migrate";
export const ROLES: readonly Role[] = ["serve", "api", "worker", "migrate"];

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

/**
 * Starts a process role. `serve` = migrate + API + worker in one process (the default);
 * `api` and `worker` scale out on PostgreSQL and refuse an unmigrated schema; `migrate` applies
 * migrations and returns.
 */
export async function startRole(
  role: Role,
  configured: Config,
  options: StartOptions = {},
): Promise<RunningProcess> {
  // CONTRACT §9: only serve and worker (and the signer) hold INTERNAL_SHARED_SECRET.
  const { config, ignored } = configForRole(configured, role);
  if ((role === "api" || role === "worker") && !config.database.url && !options.database) {
    throw new StartupError(
      `the ${role} role needs DATABASE_URL: the embedded database (PGlite) serves a single process, so ` +
        "run `serve` on embedded defaults or point every process at one PostgreSQL",
    );
  }
  const logger = options.logger ?? createLogger(config.logLevel);
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
    if (role === "serve" || role === "migrate") {
      const { applied } = await migrate(db);
      if (applied.length > 0) log.info({ applied }, "migrations applied");
    } else {
      const pending = await pendingMigrations(db);
      if (pending.length > 0) {
        throw new Error(
          `the database schema is behind this build (${pending.join(", ")}); run \`stablegate migrate\``,
        );
      }
    }
    if (role === "migrate") {
      return { role, runtime, app: undefined, listeners: undefined, stop: () => runtime.close() };
    }

    let app: App | undefined;
    let listeners: Listeners | undefined;
    if (role === "serve" || role === "api") {
      app = await buildApp(runtime, options.app);
      listeners = await listen(app, config.http.host, {
        production: config.http.port,
        sandbox: config.http.sandboxPort,
      });
      log.info(
        {
          production: `http://${config.http.host}:${listeners.ports.production}`,
          sandbox: `http://${config.http.host}:${listeners.ports.sandbox}`,
        },
        "stablegate listening",
      );
    }
    const worker = role === "serve" || role === "worker" ? startWorker(runtime, role) : undefined;
    const control = runtime.controlSocket
      ? await startControlServer(runtime.controlSocket, db, log)
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
