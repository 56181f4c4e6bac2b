import { networkVariables } from "../config/chains.js";
import { NETWORKS } from "../domain/currency.js";

/**
 * Which configuration variables a backup holds in plain text (`config.json`) and which only sealed
 * with a passphrase (`--include-secrets`), by name. Every variable of `config/schema.ts` is in
 * exactly one of the two lists (test/backup/configuration.test.ts fails on a new one that is in
 * neither); each network's variables are classified from the registry (`networkVariables`).
 * Anything else in the environment (PATH, HOME, …) is not the gateway's and is not recorded.
 */

/** Not secret: recorded as given. */
export const PLAIN_VARIABLES = [
  "NODE_ENV",
  "LOG_LEVEL",
  "LOG_FORMAT",
  "PORT",
  "SANDBOX_PORT",
  "HOST",
  "PRODUCTION_BASE_URL",
  "SANDBOX_BASE_URL",
  "TRUST_PROXY",
  "BODY_LIMIT_BYTES",
  "DATA_DIR",
  "DATABASE_POOL_SIZE",
  "REDIS_KEY_PREFIX",
  "MAIL_FROM",
  "RATE_LIMIT_ENABLED",
  "RATE_LIMIT_WINDOW_SECONDS",
  "RATE_LIMIT_AUTH",
  "RATE_LIMIT_FINANCIAL",
  "RATE_LIMIT_WALLET",
  "RATE_LIMIT_STANDARD",
  "RATE_LIMIT_DASHBOARD",
  "RATE_LIMIT_PUBLIC_PAGE",
  "WEBHOOK_RETRY_SCHEDULE",
  "WEBHOOK_TIMEOUT_MS",
  "SSRF_ALLOW_CIDRS",
  "WEBHOOK_ALLOWED_PORTS",
  "WEBHOOK_STREAM_MAX_PER_KEY",
  "WEBHOOK_STREAM_MAX_PER_MERCHANT",
  "WEBHOOK_STREAM_MAX_TOTAL",
  "WEBHOOK_STREAM_MAX_LIFETIME_SECONDS",
  "WEBHOOK_STREAM_REAUTH_SECONDS",
  "CHECKOUT_MIN_EXPIRY_SECONDS",
  "LATE_PAYMENT_WATCH_HOURS",
  "IDEMPOTENCY_LEASE_SECONDS",
  // A path: the file's words are the operator's to keep (never read by `backup`).
  "MASTER_MNEMONIC_FILE",
  // Public keys (the manifest records the database's anyway).
  "MASTER_XPUBS",
  "DOCS_USER",
  "CORS_ORIGINS",
  "FEE_SCHEDULE",
  "OTP_TTL_SECONDS",
  "AUDIT_RETENTION_DAYS",
  "RESERVE_CHECK_SECONDS",
  "RESERVE_TOLERANCE",
  "SHUTDOWN_TIMEOUT_MS",
  "SIGNER_URL",
  "SIGNER_HOST",
  "SIGNER_PORT",
  "SIGNER_MAX_OUTFLOW_PER_HOUR",
  "SIGNER_MAX_OUTFLOW_PER_DAY",
  "SENDER_STUCK_AFTER_SECONDS",
  "SCREENING_TIMEOUT_MS",
  "SCREENING_ON_ERROR",
  "SCREENING_CACHE_SECONDS",
  "EXCHANGE_RATE_SOURCE",
  "FIXED_RATES",
  "EXCHANGE_RATE_MAX_AGE_SECONDS",
  "EXCHANGE_RATE_TIMEOUT_MS",
  "CURRENCY_TYPES",
] as const;

/** Secret: only with `--include-secrets`, sealed. */
export const SECRET_VARIABLES = [
  "MASTER_MNEMONIC",
  "SECRET_ENCRYPTION_KEY",
  "JWT_SECRET",
  "INTERNAL_SHARED_SECRET",
  "METRICS_TOKEN",
  "DOCS_PASSWORD",
  "SCREENING_TOKEN",
  // Connection URLs carry passwords (a database's, Redis', the SMTP relay's).
  "DATABASE_URL",
  "REDIS_URL",
  "SMTP_URL",
  // A provider's URL often holds its API key, in its path (`/v6/<key>/latest`) or its query.
  "SCREENING_URL",
  "EXCHANGE_RATE_URL",
] as const;

/** Each network's variables, both environments: RPC endpoints and rental credentials are secret. */
export function networkVariableClasses(): { plain: string[]; secret: string[] } {
  const plain = new Set<string>();
  const secret = new Set<string>();
  for (const definition of NETWORKS) {
    for (const environment of ["production", "sandbox"] as const) {
      const v = networkVariables(definition, environment);
      // A provider's URL often holds its API key (…/v3/<key>).
      secret.add(v.endpoint);
      secret.add(v.endpoints);
      secret.add(v.rental("API_KEY"));
      secret.add(v.rental("API_SECRET"));
      secret.add(v.rental("URL"));
      for (const listing of definition.tokens) plain.add(v.contract(listing.token));
      for (const name of [
        v.confirmations,
        v.sweepThreshold,
        v.sweepMaxCostPercent,
        v.nativePrice,
        v.sweepEip7702,
        v.hotWalletMax,
        v.coldWallet,
        v.rental("MAX_SUN_PER_ENERGY"),
      ])
        plain.add(name);
    }
    for (const option of definition.options ?? []) plain.add(option.variable);
  }
  return { plain: [...plain].sort(), secret: [...secret].sort() };
}

/**
 * A URL with a user name or password in it (`https://user:pass@host`), or a query string (where
 * providers put API keys: `?access_key=…`): secret wherever it appears.
 */
function holdsCredentials(value: string): boolean {
  return value
    .split(",")
    .map((part) => part.trim())
    .some((part) => {
      if (!URL.canParse(part)) return false;
      const u = new URL(part);
      return u.username !== "" || u.password !== "" || u.search !== "" || part.includes("?");
    });
}

export interface ConfigurationSplit {
  /** Recorded in plain text. */
  plain: Record<string, string>;
  /** Sealed only with `--include-secrets`. */
  secret: Record<string, string>;
}

/** The gateway's variables of `env`, split into plain and secret ones (both sorted by name). */
export function splitConfiguration(env: Readonly<Record<string, string>>): ConfigurationSplit {
  const networks = networkVariableClasses();
  const plainNames = new Set<string>([...PLAIN_VARIABLES, ...networks.plain]);
  const secretNames = new Set<string>([...SECRET_VARIABLES, ...networks.secret]);
  const plain: Record<string, string> = {};
  const secret: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) {
    const value = env[name];
    if (value === undefined || value === "") continue;
    if (secretNames.has(name)) secret[name] = value;
    else if (plainNames.has(name)) {
      if (holdsCredentials(value)) secret[name] = value;
      else plain[name] = value;
    }
  }
  return { plain, secret };
}

/** The names `config.json` may hold: the plain variables (a restore refuses any other). */
export function plainVariableNames(): Set<string> {
  return new Set<string>([...PLAIN_VARIABLES, ...networkVariableClasses().plain]);
}

/** The names the sealed secrets may hold: any variable of the gateway's (a plain one holding credentials too). */
export function configurationVariableNames(): Set<string> {
  const networks = networkVariableClasses();
  return new Set<string>([...PLAIN_VARIABLES, ...networks.plain, ...SECRET_VARIABLES, ...networks.secret]);
}
