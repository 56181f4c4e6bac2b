import { parseArgs } from "node:util";
import { DEFAULT_BASE_URLS, type Environment, environmentOfKey } from "../client.js";

export type { Environment };

/** A wrong command line: one line on stderr, exit 2 (as `stablegate`'s own CLI). */
export class UsageError extends Error {
  override name = "UsageError";
}

export interface Connection {
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  environment: Environment;
}

/** The options every command takes. */
export const CONNECTION_OPTIONS = {
  "api-key": { type: "string" },
  "api-secret": { type: "string" },
  "base-url": { type: "string" },
  environment: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** Runs `parse` (node:util `parseArgs`, strict), its errors turned into one-line usage errors. */
export function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new UsageError(
      ((err as Error).message.split("\n")[0] ?? String(err)).split(". To specify")[0] as string,
    );
  }
}

export { parseArgs };

/**
 * Credentials from the options or `STABLEGATE_API_KEY` / `STABLEGATE_API_SECRET`; the environment
 * from `--environment` or the key's prefix (they must agree); the base URL from `--base-url`,
 * `STABLEGATE_BASE_URL` or the environment's local default.
 */
export function connection(
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv,
): Connection {
  const apiKey = str(values["api-key"]) ?? env.STABLEGATE_API_KEY;
  const apiSecret = str(values["api-secret"]) ?? env.STABLEGATE_API_SECRET;
  if (!apiKey) throw new UsageError("an API key is required: --api-key or STABLEGATE_API_KEY");
  if (!apiSecret) throw new UsageError("the API secret is required: --api-secret or STABLEGATE_API_SECRET");
  const named = str(values.environment);
  if (named !== undefined && named !== "sandbox" && named !== "production") {
    throw new UsageError(`--environment must be sandbox or production, not ${JSON.stringify(named)}`);
  }
  const fromKey = environmentOfKey(apiKey);
  if (named && fromKey && named !== fromKey) {
    throw new UsageError(`--environment ${named} does not match the API key (a ${fromKey} key)`);
  }
  const environment = (named ?? fromKey) as Environment | undefined;
  if (!environment)
    throw new UsageError("the API key names no environment: add --environment sandbox|production");
  const rawBase = str(values["base-url"]) ?? env.STABLEGATE_BASE_URL ?? DEFAULT_BASE_URLS[environment];
  let base: URL;
  try {
    base = new URL(rawBase);
  } catch {
    throw new UsageError(`--base-url is not a URL: ${JSON.stringify(rawBase)}`);
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw new UsageError("--base-url must be an http or https URL");
  }
  return { baseUrl: base.toString().replace(/\/+$/, ""), apiKey, apiSecret, environment };
}

function str(v: string | boolean | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}
