import { commandUsage, indent, synopsis } from "./args.js";
import { CLI_COMMANDS } from "./commands.js";

/**
 * The process roles (`stablegate <role>`) and what each runs. A role takes no options but
 * `--help`: its settings are environment variables, and a stray option is refused rather than
 * ignored, so that `stablegate api --port 8080` does not start on another port than the operator
 * believes.
 */
export const ROLE_SUMMARIES = {
  serve: "API + worker + migrations in one process (embedded defaults without configuration)",
  api: "HTTP API only (needs DATABASE_URL; scale out freely)",
  worker: "background jobs only (needs DATABASE_URL; scale out freely)",
  migrate: "apply database migrations and exit",
  signer:
    "the transaction signer: the only process holding the mnemonic (HTTP on\n" +
    "SIGNER_HOST:SIGNER_PORT, HMAC with INTERNAL_SHARED_SECRET; workers use SIGNER_URL)",
} as const;

export type RoleName = keyof typeof ROLE_SUMMARIES;

export function isRoleName(word: string): word is RoleName {
  return Object.hasOwn(ROLE_SUMMARIES, word);
}

/** `stablegate <role> --help`, naming the commands of the same group (`signer export-xpubs`). */
export function roleUsage(role: RoleName): string {
  const related = Object.keys(CLI_COMMANDS).filter((name) => name.startsWith(`${role} `));
  return commandUsage(role, ROLE_SUMMARIES[role], {}, related);
}

/** `stablegate --help`: every role and operator command, from their own declarations. */
export function fullUsage(): string {
  const entry = (head: string, summary: string) =>
    head.length <= 9
      ? `  ${head.padEnd(9)}  ${indent(summary, 13).trimStart()}`
      : `  ${head}\n${indent(summary, 13)}`;
  return [
    "usage: stablegate [role] | stablegate <command> [options] | stablegate help [<role or command>]",
    "",
    "roles (default: serve)",
    ...Object.entries(ROLE_SUMMARIES).map(([role, summary]) => entry(role, summary)),
    "",
    "operator commands",
    ...Object.entries(CLI_COMMANDS).map(([name, c]) => entry(synopsis(name, c.options), c.summary)),
    "",
    "Every role and command answers --help (or -h) with its usage; an unknown option is refused",
    "with exit 2. Configuration comes from environment variables (see README.md).",
  ].join("\n");
}
