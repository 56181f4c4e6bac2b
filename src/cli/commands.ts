import { randomBytes } from "node:crypto";
import type { Config } from "../config/config.js";
import type { LedgerReport } from "../ledger/index.js";
import type { RescanResult } from "../watcher/index.js";
import { type CliOptions, type Flags, UsageError } from "./args.js";
import type { Outbox } from "./mail-list.js";
import type { CreatedMerchantWithOwner } from "./merchant-create.js";

/**
 * One operator command line (`stablegate <group> <name> [options]`): its usage (built from
 * `summary` and `options`, so the help cannot drift from what is parsed) and what it does.
 */
export interface CliCommand {
  /** What it does, for the usage (lines of at most ~90 characters). */
  summary: string;
  options: CliOptions;
  /**
   * Whose key material the command may hold (docs/decisions/custody-and-faults.md#key-custody, `config/key-custody.ts`).
   * Unset: the command's own name, which holds none, so in production mode it refuses the
   * mnemonic; `signer export-xpubs` reads the mnemonic as the signer does.
   */
  custodyRole?: string;
  /** Runs the command; the result is the process's exit code. */
  run(config: Config, flags: Flags): Promise<number>;
}

const str = (v: string | boolean | undefined) => (typeof v === "string" ? v : "");

/**
 * Every operator command, keyed `"<group> <name>"` or a single word (`backup`). Add new ones here:
 * the usage follows. Each
 * `run` imports what it uses: those modules take seconds to load, which `--help` and a refused
 * command line (answered from this table) need not wait for.
 */
export const CLI_COMMANDS: Record<string, CliCommand> = {
  "merchant create": {
    summary:
      "create a merchant, its owner's dashboard login and one API key pair per environment;\n" +
      "without --password-stdin it prints a link that sets the owner's password (72 h)",
    options: {
      email: { type: "string", value: "email", required: true, help: "the merchant's sign-in e-mail" },
      company: { type: "string", value: "name", required: true, help: "the merchant's company name" },
      "password-stdin": { type: "boolean", help: "read the owner's password from standard input" },
      json: { type: "boolean", help: "print the merchant and its keys as JSON" },
    },
    async run(config, flags) {
      const { printCreatedMerchant, runOperator } = await import("./merchant-create.js");
      const created = (await runOperator(config, "merchant.create", {
        email: str(flags.email),
        companyName: str(flags.company),
        ...(flags["password-stdin"] ? { password: (await readStdin()).replace(/\r?\n$/, "") } : {}),
      })) as CreatedMerchantWithOwner;
      process.stdout.write(
        `${flags.json ? JSON.stringify(created, null, 2) : printCreatedMerchant(created, config)}\n`,
      );
      return 0;
    },
  },

  "admin create": {
    summary:
      "create a read-only platform admin for the dashboard; without --password-stdin\n" +
      "a password is generated and printed once",
    options: {
      email: { type: "string", value: "email", required: true, help: "the admin's sign-in e-mail" },
      "password-stdin": { type: "boolean", help: "read the password from standard input" },
    },
    async run(config, flags) {
      const { runOperator } = await import("./merchant-create.js");
      const generated = !flags["password-stdin"];
      const password = generated
        ? randomBytes(18).toString("base64url")
        : (await readStdin()).replace(/\r?\n$/, "");
      const admin = (await runOperator(config, "admin.create", { email: str(flags.email), password })) as {
        id: string;
        email: string;
      };
      process.stdout.write(
        `Admin ${admin.id} created for ${admin.email} (read-only dashboard access to /api/v1/admin/*).\n` +
          (generated ? `Password (shown only now): ${password}\n` : ""),
      );
      return 0;
    },
  },

  "mail list": {
    summary:
      "development only: the local outbox (mails kept when SMTP_URL is unset), every\n" +
      "recipient's, newest first: invitations, password resets, codes",
    options: {
      to: { type: "string", value: "email", help: "only the mails to this address" },
      limit: { type: "string", value: "n", help: "how many (default 20, at most 200)" },
      json: { type: "boolean", help: "print the mails as JSON" },
    },
    async run(config, flags) {
      if (config.production) {
        process.stderr.write(
          "mail list: production mode sends mail through SMTP_URL; there is no local outbox\n",
        );
        return 2;
      }
      const { runOperator } = await import("./merchant-create.js");
      const { formatOutbox } = await import("./mail-list.js");
      const { resolveSecrets } = await import("../config/secrets.js");
      const { devOutboxKey } = await import("../mail/index.js");
      const key = devOutboxKey((await resolveSecrets(config, "mail list")).JWT_SECRET);
      const pageUrl = `${config.http.sandboxBaseUrl}/dev/mail?key=${key}`;
      const r = (await runOperator(config, "mail.list", {
        to: str(flags.to),
        limit: str(flags.limit) || "20",
      })) as Outbox;
      process.stdout.write(
        `${flags.json ? JSON.stringify(r, null, 2) : formatOutbox(r, Boolean(config.smtpUrl), pageUrl)}\n`,
      );
      return 0;
    },
  },

  "config check": {
    summary:
      "validate the configuration as `serve` would read it (every variable, the secrets of\n" +
      "the mode) without starting anything; exit 2 naming each bad variable",
    options: {},
    custodyRole: "serve",
    async run(loaded) {
      // As the serve role reads it: its secrets (in production mode, required ones are missing
      // → ConfigError naming them, exit 2).
      const { configForRole } = await import("../config/secrets.js");
      const { config } = configForRole(loaded, "serve");
      const database = config.database.url
        ? "PostgreSQL (DATABASE_URL)"
        : `embedded PGlite in ${config.dataDir}`;
      process.stdout.write(
        `configuration OK: ${config.production ? "production" : "development"} mode, ${database}, ` +
          `production ${config.http.productionBaseUrl}, sandbox ${config.http.sandboxBaseUrl}\n`,
      );
      return 0;
    },
  },

  "ledger verify": {
    summary:
      "recompute every balance from the journal and check every posting balances;\n" +
      "exits 1 with a report on any mismatch",
    options: { json: { type: "boolean", help: "print the report as JSON" } },
    async run(config, flags) {
      const { runOperator } = await import("./merchant-create.js");
      const { formatLedgerReport } = await import("../ledger/index.js");
      const report = (await runOperator(config, "ledger.verify", {})) as LedgerReport;
      process.stdout.write(`${flags.json ? JSON.stringify(report, null, 2) : formatLedgerReport(report)}\n`);
      return report.ok ? 0 : 1;
    },
  },

  "chain rescan": {
    summary:
      "re-read a block range of one chain and hand off the transfers to watched addresses\n" +
      "that were missed; idempotent (what is already recorded is never credited again)",
    options: {
      network: { type: "string", value: "USDT-ERC20|USDT-TRC20", required: true, help: "the chain" },
      environment: { type: "string", value: "production|sandbox", required: true, help: "the environment" },
      from: { type: "string", value: "block", required: true, help: "first block of the range" },
      to: {
        type: "string",
        value: "block",
        required: true,
        help: "last block of the range (at most the head)",
      },
      json: { type: "boolean", help: "print the result as JSON" },
    },
    async run(config, flags) {
      const { runOperator } = await import("./merchant-create.js");
      const r = (await runOperator(config, "chain.rescan", {
        network: str(flags.network),
        environment: str(flags.environment),
        from: str(flags.from),
        to: str(flags.to),
      })) as RescanResult;
      const text =
        `${r.network} ${r.environment}: blocks ${r.fromBlock}..${r.toBlock} (${r.scannedBlocks}) re-read; ` +
        `${r.matched} transfer(s) to watched addresses, ${r.recorded} newly recorded ` +
        `(handed off once confirmed), ${r.alreadyKnown} already known.` +
        (r.forged.length > 0
          ? `\nALERT: paid watched address(es) that are not the gateway's keys at their recorded index ` +
            `(nothing recorded for them; investigate who wrote them): ${r.forged.join(", ")}`
          : "");
      process.stdout.write(`${flags.json ? JSON.stringify(r, null, 2) : text}\n`);
      return 0;
    },
  },

  "chain reconcile": {
    summary:
      "compare what every chain holds (hot wallet, gas tank, unswept deposit addresses, transfers\n" +
      "in flight) with what the ledger owes (merchant balances and fees); print the table and\n" +
      "exit 1 on a shortfall beyond the tolerance",
    options: {
      tolerance: { type: "string", value: "USDT", help: "shortfall tolerated (default RESERVE_TOLERANCE)" },
      json: { type: "boolean", help: "print the reports as JSON" },
    },
    async run(config, flags) {
      const { runOperator } = await import("./merchant-create.js");
      const { formatReserveTable, readReserveReports } = await import("../reserves/index.js");
      const { parseAmount } = await import("../domain/money.js");
      let tolerance = config.reserves.tolerance;
      if (typeof flags.tolerance === "string") {
        const parsed = parseAmount(flags.tolerance);
        if (!parsed.ok) throw new UsageError(`--tolerance ${parsed.message}`);
        tolerance = parsed.units;
      }
      // Through the control socket big integers arrive as strings: read back either way.
      const reports = readReserveReports(
        await runOperator(config, "reserves.reconcile", { tolerance: tolerance.toString() }),
      );
      process.stdout.write(
        `${flags.json ? JSON.stringify(reports, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 2) : formatReserveTable(reports)}\n`,
      );
      return reports.every((r) => r.ok) ? 0 : 1;
    },
  },

  "chain costs": {
    summary:
      "what the gateway's own transfers cost (issue #38): native coin burned per network, month\n" +
      "and purpose (collecting deposits, paying out, staking), per collected deposit and per\n" +
      "payment, and the energy or gas used from stake",
    options: {
      months: { type: "string", value: "n", help: "this month and the n-1 before it (default 3)" },
      json: { type: "boolean", help: "print the rows as JSON" },
    },
    async run(config, flags) {
      const { runOperator } = await import("./merchant-create.js");
      const { formatCostTable } = await import("../sender/index.js");
      const raw = (await runOperator(config, "costs.report", {
        months: typeof flags.months === "string" ? flags.months : "3",
      })) as Record<string, unknown>[];
      // Through the control socket big integers arrive as strings: read back either way.
      const rows = raw.map((r) => ({
        ...r,
        fee: BigInt(String(r.fee)),
        used: BigInt(String(r.used)),
      })) as Parameters<typeof formatCostTable>[0];
      process.stdout.write(
        `${flags.json ? JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 2) : formatCostTable(rows)}\n`,
      );
      return 0;
    },
  },

  "db roles": {
    summary:
      "create the PostgreSQL login roles of the api, worker and signer processes (least privilege,\n" +
      "migration 0025) and print each one's DATABASE_URL; run with the owner's DATABASE_URL after\n" +
      "migrate; idempotent (an existing role keeps its password)",
    options: {
      print: {
        type: "boolean",
        help: "print the SQL (SCRAM verifiers only) instead of running it; the URLs on stderr",
      },
      prefix: {
        type: "string",
        value: "name",
        help: "login roles are <prefix><role>_login (default <database>_)",
      },
      "rotate-passwords": { type: "boolean", help: "set new passwords on existing login roles too" },
      json: { type: "boolean", help: "print the roles and their DATABASE_URLs as JSON" },
    },
    async run(config, flags) {
      const { applyDatabaseRoles, DatabaseRolesError, formatDatabaseRoles, printDatabaseRoles } =
        await import("../operator/database-roles.js");
      const options = {
        url: config.database.url,
        ...(typeof flags.prefix === "string" ? { prefix: flags.prefix } : {}),
        rotate: flags["rotate-passwords"] === true,
      };
      try {
        if (flags.print) {
          // The SQL on stdout (`> roles.sql`), the URLs with their passwords on stderr (the terminal).
          const printed = printDatabaseRoles(options);
          process.stdout.write(printed.sql);
          process.stderr.write(
            `The DATABASE_URL of each role once the SQL has run (passwords shown only now):\n${printed.urls}`,
          );
          return 0;
        }
        const logins = await applyDatabaseRoles(options);
        process.stdout.write(
          `${flags.json ? JSON.stringify(logins, null, 2) : formatDatabaseRoles(logins)}\n`,
        );
        return 0;
      } catch (err) {
        if (!(err instanceof DatabaseRolesError)) throw err;
        process.stderr.write(`stablegate: ${err.message}\n`);
        return 2;
      }
    },
  },

  backup: {
    summary:
      "write the database (pg_dump --format=custom, or the embedded database while serve is stopped),\n" +
      "a manifest and the non-secret configuration into one archive; secrets only with\n" +
      "--include-secrets, sealed with a passphrase (docs/decisions/backups.md)",
    options: {
      output: {
        type: "string",
        value: "file",
        required: true,
        help: "the archive to write (never replaced)",
      },
      "include-secrets": {
        type: "boolean",
        help: "also the secrets (variables, DATA_DIR/secrets.json …), sealed with a passphrase",
      },
      "passphrase-file": { type: "string", value: "file", help: "read the passphrase from this file" },
      "passphrase-stdin": { type: "boolean", help: "read the passphrase from standard input" },
      json: { type: "boolean", help: "print the manifest as JSON" },
    },
    async run(config, flags) {
      const passphrase = await readPassphrase(flags);
      if (passphrase !== undefined && !flags["include-secrets"])
        throw new UsageError("backup: a passphrase seals secrets: give --include-secrets with it");
      if (flags["include-secrets"] && passphrase === undefined)
        throw new UsageError(
          "backup: --include-secrets needs --passphrase-file <file> or --passphrase-stdin",
        );
      const { BackupFailure, BackupRefusal, createBackup, formatBackupResult } = await import(
        "../backup/index.js"
      );
      const { readEnvironment } = await import("../config/load.js");
      try {
        const r = await createBackup(config, readEnvironment(), {
          output: str(flags.output),
          includeSecrets: flags["include-secrets"] === true,
          ...(passphrase !== undefined ? { passphrase } : {}),
        });
        process.stdout.write(`${flags.json ? JSON.stringify(r, null, 2) : formatBackupResult(r)}\n`);
        return 0;
      } catch (err) {
        // A refusal wrote nothing (2); a failure under way is named in one line (1).
        if (!(err instanceof BackupRefusal || err instanceof BackupFailure)) throw err;
        process.stderr.write(`stablegate: backup: ${err.message}\n`);
        return err instanceof BackupRefusal ? 2 : 1;
      }
    },
  },

  restore: {
    summary:
      "restore a backup into an empty database (or --wipe), refusing other account keys than the\n" +
      "backup's and a newer schema; then migrate, verify the ledger and reconcile the reserves;\n" +
      "exit 1 when the books do not verify",
    options: {
      input: { type: "string", value: "file", required: true, help: "the archive `stablegate backup` wrote" },
      "passphrase-file": { type: "string", value: "file", help: "open the sealed secrets: passphrase file" },
      "passphrase-stdin": { type: "boolean", help: "open the sealed secrets: passphrase on standard input" },
      wipe: {
        type: "boolean",
        help: "restore over a database (PostgreSQL: drops the public schema; embedded: moves it aside)",
      },
      "env-file": {
        type: "string",
        value: "file",
        help: "write the backup's configuration there (new, 0600)",
      },
      "dry-run": { type: "boolean", help: "check the archive, keys and target; write nothing" },
      json: { type: "boolean", help: "print the report as JSON" },
    },
    async run(config, flags) {
      const passphrase = await readPassphrase(flags);
      const { BackupFailure, BackupRefusal, formatRestoreReport, restoreBackup } = await import(
        "../backup/index.js"
      );
      const { operatorContext } = await import("./merchant-create.js");
      try {
        const r = await restoreBackup(
          config,
          {
            input: str(flags.input),
            wipe: flags.wipe === true,
            dryRun: flags["dry-run"] === true,
            ...(passphrase !== undefined ? { passphrase } : {}),
            ...(typeof flags["env-file"] === "string" ? { envFile: flags["env-file"] } : {}),
          },
          (database) => operatorContext(config, database.db),
        );
        process.stdout.write(
          `${flags.json ? JSON.stringify(r, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 2) : formatRestoreReport(r)}\n`,
        );
        return r.ok ? 0 : 1;
      } catch (err) {
        // A refusal wrote nothing (2); a failure under way is named in one line (1).
        if (!(err instanceof BackupRefusal || err instanceof BackupFailure)) throw err;
        process.stderr.write(`stablegate: restore: ${err.message}\n`);
        return err instanceof BackupRefusal ? 2 : 1;
      }
    },
  },

  "signer export-xpubs": {
    summary:
      "print MASTER_XPUBS=… (the account public keys) for the api and worker hosts, which\n" +
      "derive addresses without the mnemonic; run it where the signer's mnemonic is",
    options: {},
    custodyRole: "signer",
    async run(config) {
      const { exportAccountXpubs } = await import("../signer/index.js");
      process.stdout.write(`${await exportAccountXpubs(config)}\n`);
      return 0;
    },
  },
};

/**
 * The command a command line starts with: a single word (`backup`) or `<group> <name>`; `words`
 * is how many of the line's words name it. Null when there is none.
 */
export function findCliCommand(
  first: string,
  second: string | undefined,
): { name: string; command: CliCommand; words: 1 | 2 } | null {
  const single = CLI_COMMANDS[first];
  if (single && !first.includes(" ")) return { name: first, command: single, words: 1 };
  const name = `${first} ${second}`;
  const command = CLI_COMMANDS[name];
  return command ? { name, command, words: 2 } : null;
}

/** Whether `word` starts an operator command (so that a wrong second word prints the usage). */
export function isCliGroup(word: string): boolean {
  return Object.keys(CLI_COMMANDS).some((k) => k.startsWith(`${word} `));
}

/**
 * The passphrase of `--passphrase-file` or `--passphrase-stdin` (never a command-line value, which
 * other users of the host can read), without its final line break; undefined when neither is given.
 */
async function readPassphrase(flags: Flags): Promise<string | undefined> {
  const file = flags["passphrase-file"];
  if (typeof file === "string" && flags["passphrase-stdin"])
    throw new UsageError("give --passphrase-file or --passphrase-stdin, not both");
  let text: string | undefined;
  if (typeof file === "string") {
    const { readFile } = await import("node:fs/promises");
    text = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`cannot read the passphrase file ${file} (${err.code ?? "error"})`);
    });
  } else if (flags["passphrase-stdin"]) text = await readStdin();
  if (text === undefined) return undefined;
  const passphrase = text.replace(/\r?\n$/, "");
  if (passphrase === "") throw new UsageError("the passphrase is empty");
  return passphrase;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
