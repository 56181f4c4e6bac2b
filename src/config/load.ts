import { type Config, parseConfig } from "./config.js";

/** The one place that reads the process environment. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseConfig(env);
}

/**
 * The variables as given, without the empty ones (which mean "unset", as `parseConfig` reads them):
 * `stablegate backup` records the configuration by variable name, not the parsed object.
 */
export function readEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ""),
  );
}
