import path from "node:path";
import type { CurrencyType } from "../domain/currency.js";
import { parseFixedRates } from "../domain/exchange-rate.js";
import { defaultFeeSchedule, type FeeSchedule, parseFeeSchedule } from "../domain/fees.js";
import { type ChainsConfig, parseChainsConfig } from "./chains.js";
import { parseOutflowCap } from "./outflow-cap.js";
import { envSchema } from "./schema.js";
import { type AccountXpubs, parseAccountXpubs } from "./xpubs.js";

export const RATE_LIMIT_TIERS = [
  "auth",
  "financial",
  "wallet",
  "standard",
  "dashboard",
  "publicPage",
] as const;
export type RateLimitTier = (typeof RATE_LIMIT_TIERS)[number];

export type Mode = "development" | "test" | "production";

/** Secrets that are generated into DATA_DIR outside production mode and required in it. */
export const GENERATED_SECRET_NAMES = [
  "SECRET_ENCRYPTION_KEY",
  "JWT_SECRET",
  "INTERNAL_SHARED_SECRET",
] as const;
export type GeneratedSecretName = (typeof GENERATED_SECRET_NAMES)[number];

export interface Config {
  mode: Mode;
  production: boolean;
  logLevel: string;
  /** `json`: JSON lines even on a development terminal. */
  logFormat: "auto" | "json";
  http: {
    host: string;
    port: number;
    sandboxPort: number;
    productionBaseUrl: string;
    sandboxBaseUrl: string;
    /** `false`: the socket address is the client; a hop count; or the proxies' addresses/CIDRs (docs/decisions/security.md). */
    trustProxy: false | number | string[];
    bodyLimitBytes: number;
  };
  dataDir: string;
  database: { url: string | undefined; poolSize: number };
  redisUrl: string | undefined;
  /** Prefix of every Redis key, so one Redis can serve several deployments. */
  redisKeyPrefix: string;
  smtpUrl: string | undefined;
  mailFrom: string | undefined;
  rateLimit: { enabled: boolean; windowMs: number; limits: Record<RateLimitTier, number> };
  webhooks: {
    retryScheduleSeconds: number[];
    timeoutMs: number;
    ssrfAllowCidrs: string[];
    /** `WEBHOOK_ALLOWED_PORTS`: ports webhook and callback URLs may use (SSRF_ALLOW_CIDRS ranges: any). */
    allowedPorts: number[];
    /**
     * The webhook stream: `WEBHOOK_STREAM_MAX_PER_KEY`, `_MAX_PER_MERCHANT`, `_MAX_TOTAL` (open streams,
     * counted across instances), `_MAX_LIFETIME_SECONDS`, `_REAUTH_SECONDS` (periodic re-check).
     */
    stream: {
      maxPerKey: number;
      maxPerMerchant: number;
      maxTotal: number;
      maxLifetimeMs: number;
      reauthMs: number;
    };
  };
  checkout: { minExpirySeconds: number; latePaymentWatchHours: number };
  /** `IDEMPOTENCY_LEASE_SECONDS`: a claim not renewed for this long belongs to a dead request. */
  idempotency: { leaseMs: number };
  /** `AUDIT_RETENTION_DAYS`: audit records older than this are purged hourly; 0 keeps all. */
  audit: { retentionDays: number };
  /** `RESERVE_CHECK_SECONDS` (0: no job) and `RESERVE_TOLERANCE` (USDT, as base units): issue #22. */
  reserves: { checkEveryMs: number; tolerance: bigint };
  /** `CURRENCY_TYPES` and each network's settings (`config/chains.ts`). */
  chains: ChainsConfig;
  mnemonic: { value: string | undefined; file: string | undefined };
  /** `MASTER_XPUBS`: what the roles that never sign derive addresses from (`config/key-custody.ts`). */
  accountXpubs: AccountXpubs | undefined;
  /** Secrets as configured; `resolveSecrets` fills the generated ones outside production. */
  secrets: Record<GeneratedSecretName, string | undefined>;
  docs: { user: string | undefined; password: string | undefined };
  corsOrigins: string[];
  otpTtlSeconds: number;
  /** Fees per currency type and kind (defaults overridden by FEE_SCHEDULE). */
  fees: FeeSchedule;
  metricsToken: string | undefined;
  shutdownTimeoutMs: number;
  /** Outgoing transfers, the signer role and sweeps (chains part 2). */
  sending: SendingConfig;
  /** The optional screening provider (`src/screening/`, docs/screening.md). */
  screening: ScreeningConfig;
  /** Exchange rates of prices in fiat (`src/rates/`, docs/decisions/prices.md). */
  rates: RatesConfig;
}

/** `EXCHANGE_RATE_*` and `FIXED_RATES` (issue #41): where the rates of prices in fiat come from. */
export interface RatesConfig {
  /** `EXCHANGE_RATE_SOURCE`: the operator's fixed table or a public ticker. */
  source: "fixed" | "coinbase" | "kraken";
  /** `FIXED_RATES`: token units per unit of fiat (10^-18 units) by ISO 4217 code. */
  fixed: ReadonlyMap<string, bigint>;
  /** `EXCHANGE_RATE_MAX_AGE_SECONDS`: an older quote is no rate (503 RATE_UNAVAILABLE). */
  maxAgeSeconds: number;
  /** `EXCHANGE_RATE_URL`: the ticker's API root instead of its public one. */
  url: string | undefined;
  /** `EXCHANGE_RATE_TIMEOUT_MS`: the longest one ticker request may take. */
  timeoutMs: number;
}

/** `SCREENING_*` (issue #40): the optional provider that screens senders and destinations. */
export interface ScreeningConfig {
  /** `SCREENING_URL` (http or https); unset: screening is off. */
  url: string | undefined;
  /** `SCREENING_TOKEN`: sent as `Authorization: Bearer …`; a secret. */
  token: string | undefined;
  /** `SCREENING_TIMEOUT_MS`: the longest one query may take. */
  timeoutMs: number;
  /** `SCREENING_ON_ERROR`: a provider error refuses (`closed`) or allows (`open`). */
  onError: "closed" | "open";
  /** `SCREENING_CACHE_SECONDS`: how long an answer is kept; 0: never cached. */
  cacheSeconds: number;
}

export interface SendingConfig {
  /** `SIGNER_URL`: the signer role, for `worker` processes (`serve` signs in-process). */
  signerUrl: string | undefined;
  signerHost: string;
  signerPort: number;
  /** `SIGNER_MAX_OUTFLOW_PER_HOUR` / `_PER_DAY` (token base units per currency type; null: unset). */
  outflowCap: {
    perHour: Partial<Record<CurrencyType, bigint>> | null;
    perDay: Partial<Record<CurrencyType, bigint>> | null;
  };
  stuckAfterMs: number;
}

/** A start-up error that names the offending variable(s). */
export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * Parses the environment into the one configuration object. Pure: reads only `env`.
 * Throws ConfigError naming every bad variable.
 */
export function parseConfig(env: Record<string, string | undefined>): Config {
  // Empty strings mean "unset", as in most deployment tools.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? "(root)"), message: i.message })),
    );
  }
  const e = parsed.data;
  const problems: { variable: string; message: string }[] = [];
  if (e.MASTER_MNEMONIC && e.MASTER_MNEMONIC_FILE) {
    problems.push({
      variable: "MASTER_MNEMONIC_FILE",
      message: "set MASTER_MNEMONIC or MASTER_MNEMONIC_FILE, not both",
    });
  }
  if (e.PORT !== 0 && e.PORT === e.SANDBOX_PORT) {
    problems.push({ variable: "SANDBOX_PORT", message: "must differ from PORT" });
  }
  const production = e.NODE_ENV === "production";
  // In production mode the secrets and key material a process must be given depend on its role
  // (docs/decisions/security.md: least privilege): `configForRole` in secrets.ts (SECRET_ENCRYPTION_KEY,
  // JWT_SECRET, METRICS_TOKEN, INTERNAL_SHARED_SECRET) and `keyMaterialForRole` in key-custody.ts.
  if ((e.DOCS_USER === undefined) !== (e.DOCS_PASSWORD === undefined)) {
    problems.push({ variable: "DOCS_PASSWORD", message: "DOCS_USER and DOCS_PASSWORD are set together" });
  }
  let fees = defaultFeeSchedule();
  if (e.FEE_SCHEDULE) {
    const parsedFees = parseFeeSchedule(e.FEE_SCHEDULE);
    if ("error" in parsedFees) problems.push({ variable: "FEE_SCHEDULE", message: parsedFees.error });
    else fees = parsedFees.schedule;
  }
  const chains = parseChainsConfig(cleaned as Record<string, string>, problems);
  let accountXpubs: AccountXpubs | undefined;
  if (e.MASTER_XPUBS) {
    const parsedXpubs = parseAccountXpubs(e.MASTER_XPUBS, chains.enabled);
    if ("error" in parsedXpubs) problems.push({ variable: "MASTER_XPUBS", message: parsedXpubs.error });
    else accountXpubs = parsedXpubs.xpubs;
  }
  const outflowCap: SendingConfig["outflowCap"] = { perHour: null, perDay: null };
  for (const [key, variable] of [
    ["perHour", "SIGNER_MAX_OUTFLOW_PER_HOUR"],
    ["perDay", "SIGNER_MAX_OUTFLOW_PER_DAY"],
  ] as const) {
    const r = parseOutflowCap(e[variable], chains.enabled);
    if ("error" in r) problems.push({ variable, message: r.error });
    else outflowCap[key] = r.limits;
  }
  const fixedRates = parseFixedRates(e.FIXED_RATES);
  if (!fixedRates.ok) problems.push({ variable: "FIXED_RATES", message: fixedRates.message });
  if (problems.length > 0 || !fixedRates.ok) throw new ConfigError(problems);

  const productionBaseUrl = stripSlash(e.PRODUCTION_BASE_URL ?? `http://localhost:${e.PORT}`);
  const sandboxBaseUrl = stripSlash(e.SANDBOX_BASE_URL ?? `http://localhost:${e.SANDBOX_PORT}`);
  if (new URL(productionBaseUrl).host === new URL(sandboxBaseUrl).host) {
    // The Host of a request selects its environment behind a proxy, so the two must differ.
    throw new ConfigError([
      { variable: "SANDBOX_BASE_URL", message: "must have a different host than PRODUCTION_BASE_URL" },
    ]);
  }
  return {
    mode: e.NODE_ENV,
    production,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    http: {
      host: e.HOST,
      port: e.PORT,
      sandboxPort: e.SANDBOX_PORT,
      productionBaseUrl,
      sandboxBaseUrl,
      trustProxy: e.TRUST_PROXY,
      bodyLimitBytes: e.BODY_LIMIT_BYTES,
    },
    dataDir: path.resolve(e.DATA_DIR),
    database: { url: e.DATABASE_URL, poolSize: e.DATABASE_POOL_SIZE },
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    rateLimit: {
      enabled: e.RATE_LIMIT_ENABLED,
      windowMs: e.RATE_LIMIT_WINDOW_SECONDS * 1000,
      limits: {
        auth: e.RATE_LIMIT_AUTH,
        financial: e.RATE_LIMIT_FINANCIAL,
        wallet: e.RATE_LIMIT_WALLET,
        standard: e.RATE_LIMIT_STANDARD,
        dashboard: e.RATE_LIMIT_DASHBOARD,
        publicPage: e.RATE_LIMIT_PUBLIC_PAGE,
      },
    },
    webhooks: {
      retryScheduleSeconds: e.WEBHOOK_RETRY_SCHEDULE,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      ssrfAllowCidrs: e.SSRF_ALLOW_CIDRS,
      allowedPorts: e.WEBHOOK_ALLOWED_PORTS,
      stream: {
        maxPerKey: e.WEBHOOK_STREAM_MAX_PER_KEY,
        maxPerMerchant: e.WEBHOOK_STREAM_MAX_PER_MERCHANT,
        maxTotal: e.WEBHOOK_STREAM_MAX_TOTAL,
        maxLifetimeMs: Math.round(e.WEBHOOK_STREAM_MAX_LIFETIME_SECONDS * 1000),
        reauthMs: Math.round(e.WEBHOOK_STREAM_REAUTH_SECONDS * 1000),
      },
    },
    checkout: {
      minExpirySeconds: e.CHECKOUT_MIN_EXPIRY_SECONDS,
      latePaymentWatchHours: e.LATE_PAYMENT_WATCH_HOURS,
    },
    idempotency: { leaseMs: Math.round(e.IDEMPOTENCY_LEASE_SECONDS * 1000) },
    audit: { retentionDays: e.AUDIT_RETENTION_DAYS },
    reserves: { checkEveryMs: e.RESERVE_CHECK_SECONDS * 1000, tolerance: usdtUnits(e.RESERVE_TOLERANCE) },
    chains,
    mnemonic: { value: e.MASTER_MNEMONIC, file: e.MASTER_MNEMONIC_FILE },
    accountXpubs,
    secrets: {
      SECRET_ENCRYPTION_KEY: e.SECRET_ENCRYPTION_KEY,
      JWT_SECRET: e.JWT_SECRET,
      INTERNAL_SHARED_SECRET: e.INTERNAL_SHARED_SECRET,
    },
    docs: { user: e.DOCS_USER, password: e.DOCS_PASSWORD },
    corsOrigins:
      e.CORS_ORIGINS ??
      (production
        ? [productionBaseUrl, sandboxBaseUrl]
        : withLoopbackTwins([productionBaseUrl, sandboxBaseUrl])),
    otpTtlSeconds: e.OTP_TTL_SECONDS,
    fees,
    metricsToken: e.METRICS_TOKEN,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    sending: {
      signerUrl: e.SIGNER_URL,
      signerHost: e.SIGNER_HOST,
      signerPort: e.SIGNER_PORT,
      outflowCap,
      stuckAfterMs: e.SENDER_STUCK_AFTER_SECONDS * 1000,
    },
    screening: {
      url: e.SCREENING_URL,
      token: e.SCREENING_TOKEN,
      timeoutMs: e.SCREENING_TIMEOUT_MS,
      onError: e.SCREENING_ON_ERROR,
      cacheSeconds: e.SCREENING_CACHE_SECONDS,
    },
    rates: {
      source: e.EXCHANGE_RATE_SOURCE,
      fixed: fixedRates.rates,
      maxAgeSeconds: e.EXCHANGE_RATE_MAX_AGE_SECONDS,
      url: e.EXCHANGE_RATE_URL,
      timeoutMs: e.EXCHANGE_RATE_TIMEOUT_MS,
    },
  };
}

function stripSlash(u: string): string {
  return u.replace(/\/+$/, "");
}

/** "12.5" USDT (validated by the schema) as base units. */
function usdtUnits(text: string): bigint {
  const [whole = "0", fraction = ""] = text.split(".");
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, "0") || "0");
}

/**
 * Outside production mode, each loopback base URL also in its other spellings: a developer opens
 * whichever the terminal printed or the browser kept (`localhost`, `127.0.0.1`, `[::1]`), and
 * signing up at `http://127.0.0.1:8081` was refused by the Origin check (issue #35).
 */
function withLoopbackTwins(urls: string[]): string[] {
  const loopback = ["localhost", "127.0.0.1", "[::1]"];
  const out = new Set<string>();
  for (const raw of urls) {
    out.add(raw);
    const u = new URL(raw);
    if (!loopback.includes(u.hostname)) continue;
    for (const host of loopback) {
      u.hostname = host;
      out.add(u.toString().replace(/\/+$/, ""));
    }
  }
  return [...out];
}
