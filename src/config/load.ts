import { type Config, parseConfig } from "./config.js";

/** The one place that reads the process environment. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseConfig(env);
}
