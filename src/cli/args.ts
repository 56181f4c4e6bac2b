import { parseArgs } from "node:util";

/**
 * A command line stablegate refuses (unknown option, missing value, stray argument, missing
 * required option): `main.ts` prints it as the one line `stablegate: <message>` and exits 2,
 * without a stack trace — it is the operator's typo, not a fault.
 */
export class UsageError extends Error {}

/** One option of a command, declared next to the command (its usage text is built from these). */
export interface CliOption {
  type: "string" | "boolean";
  /** How the usage shows a string option's value: `email` for `--email <email>`. */
  value?: string;
  /** The command refuses to run without it; checked before configuration or the database. */
  required?: boolean;
  /** One line for the usage's option list. */
  help: string;
}

export type CliOptions = Record<string, CliOption>;
export type Flags = Record<string, string | boolean | undefined>;

/** Every command and role answers these; they are not declared per command. */
const HELP_OPTION: CliOption = { type: "boolean", help: "print this help and exit" };

/**
 * Whether the command line asks for help (`--help` or `-h` anywhere before `--`). Help wins over
 * every other mistake on the line, and is answered before configuration is loaded, so that it
 * works on a machine whose configuration is broken or holds production secrets it lacks.
 */
export function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/**
 * The flags of `args` for the command `name` (`"ledger verify"`, a role, or `""` for stablegate
 * itself). node's strict `parseArgs` throws errors whose messages span several lines and name
 * the option in prose; this walks its tokens instead and refuses the first mistake as one line.
 */
export function parseCommandLine(name: string, options: CliOptions, args: readonly string[]): Flags {
  const refuse = (what: string) =>
    new UsageError(`${name ? `${name}: ` : ""}${what} (see stablegate ${name ? `${name} ` : ""}--help)`);
  const { tokens } = parseArgs({
    args: [...args],
    options: {
      ...Object.fromEntries(Object.entries(options).map(([key, o]) => [key, { type: o.type }])),
      help: { type: "boolean", short: "h" },
    },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const flags: Flags = {};
  for (const token of tokens) {
    if (token.kind === "option-terminator") continue;
    if (token.kind === "positional") throw refuse(`unexpected argument ${JSON.stringify(token.value)}`);
    const option = token.name === "help" ? HELP_OPTION : options[token.name];
    if (!option) throw refuse(`unknown option ${token.rawName}`);
    if (option.type === "boolean") {
      if (token.value !== undefined) throw refuse(`${token.rawName} takes no value`);
      flags[token.name] = true;
      continue;
    }
    // A next word starting with "-" is the next option, not this one's value (`--email --json`
    // forgot the address); node's strict mode refuses it too. `--company=-x` passes such a value.
    if (token.value === undefined || (!token.inlineValue && token.value.startsWith("-"))) {
      throw refuse(`missing value for ${token.rawName}`);
    }
    flags[token.name] = token.value;
  }
  for (const [key, option] of Object.entries(options)) {
    if (option.required && flags[key] === undefined) throw refuse(`missing ${optionSynopsis(key, option)}`);
  }
  return flags;
}

/** `--email <email>`, `--json`. */
function optionSynopsis(key: string, option: CliOption): string {
  return option.type === "string" ? `--${key} <${option.value ?? "value"}>` : `--${key}`;
}

/** The command line of a command: `ledger verify [--json]`. */
export function synopsis(name: string, options: CliOptions): string {
  const parts = Object.entries(options).map(([key, o]) =>
    o.required ? optionSynopsis(key, o) : `[${optionSynopsis(key, o)}]`,
  );
  return [name, ...parts].join(" ");
}

/** The `--help` text of a command or role: its synopsis, what it does, its options. */
export function commandUsage(
  name: string,
  summary: string,
  options: CliOptions,
  seeAlso: string[] = [],
): string {
  const rows = [
    ...Object.entries(options).map(([key, o]) => [optionSynopsis(key, o), o.help] as const),
    ["-h, --help", HELP_OPTION.help] as const,
  ];
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    `usage: stablegate ${synopsis(name, options)}`,
    "",
    indent(summary, 2),
    "",
    "options",
    ...rows.map(([left, help]) => `  ${left.padEnd(width)}  ${help}`),
    ...seeAlso.map((other) => `\nsee also: stablegate ${other} --help`),
    "",
    "Configuration comes from environment variables (see README.md).",
  ].join("\n");
}

export function indent(text: string, spaces: number): string {
  return text
    .split("\n")
    .map((line) => `${" ".repeat(spaces)}${line}`)
    .join("\n");
}
