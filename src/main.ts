#!/usr/bin/env node
import { findCliCommand, isCliGroup } from "./cli/commands.js";
import { ConfigError } from "./config/config.js";
import { keyMaterialForRole } from "./config/key-custody.js";
import { loadConfig } from "./config/load.js";
import { DataDirInUseError } from "./db/embedded-lock.js";
import { AppError } from "./domain/errors.js";
import { createLogger } from "./observability/logger.js";
import { RemoteCommandError } from "./operator/control-client.js";
import { tightenDataDir } from "./roles/data-dir.js";
import { ROLES, type RunningProcess, runMigrations, type ServiceRole, startRole } from "./roles/processes.js";
import { StartupError } from "./roles/startup-error.js";
import { exportAccountXpubs } from "./signer/export-xpubs.js";
import { SignerStartupError, startSignerRole } from "./signer/role.js";

const USAGE = `usage: stablegate [role] | stablegate <command>

roles (default: serve)
  serve      API + worker + migrations in one process (embedded defaults without configuration)
  api        HTTP API only (needs DATABASE_URL; scale out freely)
  worker     background jobs only (needs DATABASE_URL; scale out freely)
  migrate    apply database migrations and exit
  signer     the transaction signer: the only process holding the mnemonic (HTTP on
             SIGNER_HOST:SIGNER_PORT, HMAC with INTERNAL_SHARED_SECRET; workers use SIGNER_URL)
  signer export-xpubs
             print MASTER_XPUBS=… (the account public keys) for api and worker hosts, which
             derive addresses without the mnemonic; run it where the signer's mnemonic is

operator commands
  merchant create --email <email> --company <name> [--json]
             create a merchant and print one API key pair per environment
  admin create --email <email> [--password-stdin]
             create a read-only platform admin for the dashboard; without --password-stdin
             a password is generated and printed once
  ledger verify [--json]
             recompute every balance from the journal and check every posting balances;
             exits 1 with a report on any mismatch

Configuration comes from environment variables (see README.md).`;

/**
 * Everything a stablegate process creates is private to its user (CONTRACT §9: DATA_DIR 0700,
 * files 0600), whatever umask the shell or service manager gave it. Set before anything is
 * written, for every role and operator command. (`process.umask` exists on the main thread only;
 * stablegate starts no worker threads. PGlite's unpacked data folder ignores it and is made
 * private after opening: `db/database.ts`.)
 */
const PRIVATE_UMASK = 0o077;

async function main(argv: string[]): Promise<number> {
  process.umask(PRIVATE_UMASK);
  const [first = "serve"] = argv;
  if (first === "help" || first === "--help" || first === "-h") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const config = loadConfig();

  if (isCliGroup(first)) {
    const found = findCliCommand(argv);
    if (!found) {
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    // Operator commands hold no key material: in production mode they refuse the mnemonic.
    keyMaterialForRole(config, argv.slice(0, 2).join(" "));
    return found.command.run(config, found.flags);
  }

  if (first === "signer" && argv[1] === "export-xpubs") {
    process.stdout.write(`${await exportAccountXpubs(config)}\n`);
    return 0;
  }
  if (first === "signer") {
    const logger = createLogger(config.logLevel);
    await tightenDataDir(config.dataDir, logger);
    const signer = await startSignerRole(config, { logger });
    return new Promise<number>((resolve) => {
      const onSignal = () => void signer.close().then(() => resolve(0));
      process.once("SIGTERM", onSignal);
      process.once("SIGINT", onSignal);
    });
  }

  if (!(ROLES as readonly string[]).includes(first)) {
    process.stderr.write(`unknown role or command: ${first}\n\n${USAGE}\n`);
    return 2;
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
  if (first === "migrate") {
    await runMigrations(config);
    return 0;
  }
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  proc = await startRole(first as ServiceRole, config);
  if (signals > 0) void stop(proc);
  return exited;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (
      err instanceof ConfigError ||
      err instanceof DataDirInUseError ||
      err instanceof StartupError ||
      err instanceof SignerStartupError
    ) {
      console.error(`stablegate: ${err.message}`);
      process.exit(2);
    }
    if (err instanceof AppError || err instanceof RemoteCommandError) {
      const details = (err.details as { fields?: { field: string; message: string }[] }).fields;
      console.error(
        `stablegate: ${err.message}${details ? `\n${details.map((f) => `  ${f.field}: ${f.message}`).join("\n")}` : ""}`,
      );
      process.exit(2);
    }
    console.error("stablegate: fatal:", err);
    process.exit(1);
  },
);
