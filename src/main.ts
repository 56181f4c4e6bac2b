#!/usr/bin/env node
import { commandUsage, parseCommandLine, UsageError, wantsHelp } from "./cli/args.js";
import { findCliCommand, isCliGroup } from "./cli/commands.js";
import { fullUsage, isRoleName, roleUsage } from "./cli/usage.js";
import { ConfigError } from "./config/config.js";
import { keyMaterialForRole } from "./config/key-custody.js";
import { loadConfig } from "./config/load.js";
import { configForRole } from "./config/secrets.js";
import { DataDirInUseError } from "./db/embedded-lock.js";
import { AppError } from "./domain/errors.js";
import { RemoteCommandError } from "./operator/control-client.js";
import { StartupError } from "./roles/startup-error.js";

/**
 * Everything a stablegate process creates is private to its user (docs/decisions/security.md: DATA_DIR 0700,
 * files 0600), whatever umask the shell or service manager gave it. Set before anything is
 * written, for every role and operator command. (`process.umask` exists on the main thread only;
 * stablegate starts no worker threads. PGlite's unpacked data folder ignores it and is made
 * private after opening: `db/database.ts`.)
 */
const PRIVATE_UMASK = 0o077;

async function main(argv: string[]): Promise<number> {
  process.umask(PRIVATE_UMASK);
  // The command line is checked, and help answered, before the configuration is loaded: `--help`
  // works on a host whose configuration is broken or lacks production secrets, and a mistyped
  // option is refused before anything is opened or written.
  const [first = "serve", second] = argv;
  if (first === "help") return help(argv.slice(1));
  if (first.startsWith("-")) {
    if (wantsHelp(argv)) return help([]);
    parseCommandLine("", {}, argv);
  }

  const found = findCliCommand(first, second);
  if (found) {
    const { name, command } = found;
    const rest = argv.slice(found.words);
    if (wantsHelp(rest)) return help(argv.slice(0, found.words));
    const flags = parseCommandLine(name, command.options, rest);
    // Each command gets the secrets it uses (`signer export-xpubs` none of the service's) and, in
    // production mode, refuses the mnemonic unless it is the signer's own command.
    const { config } = configForRole(loadConfig(), name);
    keyMaterialForRole(config, command.custodyRole ?? name);
    return command.run(config, flags);
  }
  // A group's word without one of its commands (`ledger`, `ledger frobnicate`, `signer frobnicate`)
  // prints the usage; `signer` alone or with options is the role.
  const roleLine = isRoleName(first) && (second === undefined || second.startsWith("-"));
  if (isCliGroup(first) && !roleLine) {
    if (argv.length === 2 && wantsHelp(argv.slice(1))) return help([first]);
    process.stderr.write(`${fullUsage()}\n`);
    return 2;
  }
  if (!isRoleName(first)) {
    process.stderr.write(`unknown role or command: ${first}\n\n${fullUsage()}\n`);
    return 2;
  }
  const rest = argv.slice(1);
  if (wantsHelp(rest)) return help([first]);
  parseCommandLine(first, {}, rest);
  const config = loadConfig();
  // The role's modules (HTTP server, database drivers, chains) take seconds to load: imported only
  // once the command line is known to start one, so that help and a refused line answer at once.
  const { runRole } = await import("./cli/run-role.js");
  return runRole(first, config);
}

/**
 * `stablegate help [<role or command>]`, and every `--help`: the usage on stdout, exit 0. A
 * group's word alone (`help ledger`) gets the whole usage, which lists the group's commands.
 */
function help(words: (string | undefined)[]): number {
  const [first = "", second] = words;
  const found = findCliCommand(first, second);
  let text: string;
  if (found && words.length === found.words)
    text = commandUsage(found.name, found.command.summary, found.command.options);
  else if (isRoleName(first) && second === undefined) text = roleUsage(first);
  else if (words.length === 0 || (isCliGroup(first) && second === undefined)) text = fullUsage();
  else {
    process.stderr.write(`unknown role or command: ${words.join(" ")}\n\n${fullUsage()}\n`);
    return 2;
  }
  process.stdout.write(`${text}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (
      err instanceof UsageError ||
      err instanceof ConfigError ||
      err instanceof DataDirInUseError ||
      err instanceof StartupError
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
