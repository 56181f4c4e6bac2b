import type { Config } from "../config/config.js";
import { createProcessLogger } from "../observability/logger.js";
import { tightenDataDir } from "../roles/data-dir.js";
import { type RunningProcess, runMigrations, startRole } from "../roles/processes.js";
import { StartupError } from "../roles/startup-error.js";
import { SignerStartupError, startSignerRole } from "../signer/index.js";
import type { RoleName } from "./usage.js";

/**
 * Runs `stablegate <role>` until it is stopped; the result is the process's exit code. Its own
 * module, imported by `main.ts` only once a role is to start (it loads every runtime module).
 */
export async function runRole(role: RoleName, config: Config): Promise<number> {
  if (role === "signer") {
    const logger = createProcessLogger(config);
    await tightenDataDir(config.dataDir, logger);
    const signer = await startSignerRole(config, { logger }).catch((err: unknown) => {
      // The same operator-fixable refusal as the other roles' (`main.ts` prints it: exit 2, no stack trace).
      throw err instanceof SignerStartupError ? new StartupError(err.message, { cause: err }) : err;
    });
    return new Promise<number>((resolve) => {
      const onSignal = () => void signer.close().then(() => resolve(0));
      process.once("SIGTERM", onSignal);
      process.once("SIGINT", onSignal);
    });
  }
  // Signals are handled from before the start: one that arrives while the role is starting stops
  // it gracefully as soon as it has started (it used to kill the half-started process).
  let signals = 0;
  let proc: RunningProcess | undefined;
  let exit: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => {
    exit = resolve;
  });
  const stop = (p: RunningProcess) =>
    p.stop().then(
      () => exit(0),
      (err: unknown) => {
        p.runtime.logger.error({ err }, "error during shutdown");
        exit(1);
      },
    );
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      if (!proc) process.exit(1);
      proc.runtime.logger.warn({ signal }, "second signal: exiting now");
      exit(1);
      return;
    }
    if (proc) void stop(proc);
  };
  if (role === "migrate") {
    await runMigrations(config);
    return 0;
  }
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  proc = await startRole(role, config);
  if (signals > 0) void stop(proc);
  return exited;
}
