import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import type { Config } from "../config/config.js";
import { formatLedgerReport, type LedgerReport } from "../ledger/verify.js";
import type { CreatedMerchant } from "../services/merchants.js";
import { printCreatedMerchant, runOperator } from "./merchant-create.js";

type Flags = Record<string, string | boolean | undefined>;

/** One operator command line (`stablegate <group> <name> [flags]`): its flags and what it does. */
interface CliCommand {
  options: Record<string, { type: "string" | "boolean" }>;
  /** Runs the command; the result is the process's exit code. */
  run(config: Config, flags: Flags): Promise<number>;
}

const str = (v: string | boolean | undefined) => (typeof v === "string" ? v : "");

/** Every operator command, keyed `"<group> <name>"`. Add new ones here (and to the usage text). */
export const CLI_COMMANDS: Record<string, CliCommand> = {
  "merchant create": {
    options: { email: { type: "string" }, company: { type: "string" }, json: { type: "boolean" } },
    async run(config, flags) {
      const created = (await runOperator(config, "merchant.create", {
        email: str(flags.email),
        companyName: str(flags.company),
      })) as CreatedMerchant;
      process.stdout.write(
        `${flags.json ? JSON.stringify(created, null, 2) : printCreatedMerchant(created, config)}\n`,
      );
      return 0;
    },
  },

  "ledger verify": {
    options: { json: { type: "boolean" } },
    async run(config, flags) {
      const report = (await runOperator(config, "ledger.verify", {})) as LedgerReport;
      process.stdout.write(`${flags.json ? JSON.stringify(report, null, 2) : formatLedgerReport(report)}\n`);
      return report.ok ? 0 : 1;
    },
  },

  "admin create": {
    options: { email: { type: "string" }, "password-stdin": { type: "boolean" } },
    async run(config, flags) {
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
};

/** The command of `argv` (`["merchant", "create", …flags]`), or null when it names none. */
export function findCliCommand(argv: string[]): { command: CliCommand; flags: Flags } | null {
  const [group, name, ...rest] = argv;
  const command = CLI_COMMANDS[`${group} ${name}`];
  if (!command) return null;
  const { values } = parseArgs({ args: rest, options: command.options });
  return { command, flags: values };
}

/** Whether `word` starts an operator command (so that a wrong second word prints the usage). */
export function isCliGroup(word: string): boolean {
  return Object.keys(CLI_COMMANDS).some((k) => k.startsWith(`${word} `));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
