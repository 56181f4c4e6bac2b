import path from "node:path";
import { EVM_DEFINITION as EVM } from "../chains/evm/definition.js";
import { TRON_DEFINITION as TRON } from "../chains/tron/definition.js";
import { DEFAULT_FEE_SCHEDULE, type FeeSchedule, parseFeeSchedule } from "../domain/fees.js";
import { parseAmount } from "../domain/money.js";
import { parseOutflowCap } from "./outflow-cap.js";
import { envSchema, type RawEnv } from "./schema.js";
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
  chains: {
    confirmations: { trc20: number | undefined; erc20: number | undefined };
    production: ChainEndpoints;
    sandbox: ChainEndpoints;
  };
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
}

export interface ColdWallet {
  max: bigint;
  address: string;
}

export interface SendingConfig {
  /** `SIGNER_URL`: the signer role, for `worker` processes (`serve` signs in-process). */
  signerUrl: string | undefined;
  signerHost: string;
  signerPort: number;
  /** `SIGNER_MAX_OUTFLOW_PER_HOUR` / `_PER_DAY` (token base units per currency type; null: unset). */
  outflowCap: {
    perHour: Record<"USDT-ERC20" | "USDT-TRC20", bigint> | null;
    perDay: Record<"USDT-ERC20" | "USDT-TRC20", bigint> | null;
  };
  /** Deposit balances at or above this (token base units) are swept to the hot wallet. */
  sweepThreshold: { erc20: bigint; trc20: bigint };
  /**
   * Cold-wallet forwarding per environment and network (issue #22): the hot wallet keeps at most
   * `max` (base units); the excess goes to `address`. Absent: no forwarding.
   */
  cold: Record<"production" | "sandbox", Partial<Record<"USDT-ERC20" | "USDT-TRC20", ColdWallet>>>;
  stuckAfterMs: number;
  tronFeeLimitSun: number;
}

export interface ChainEndpoints {
  /** The first provider (the writer's endpoint); undefined when none is configured. */
  erc20RpcUrl: string | undefined;
  trc20ApiUrl: string | undefined;
  /** Every provider: `ERC20_RPC_URL` then `ERC20_RPC_URLS`, without repeats (issue #22). */
  erc20RpcUrls: string[];
  trc20ApiUrls: string[];
  usdtErc20Contract: string | undefined;
  usdtTrc20Contract: string | undefined;
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
  let accountXpubs: AccountXpubs | undefined;
  if (e.MASTER_XPUBS) {
    const parsedXpubs = parseAccountXpubs(e.MASTER_XPUBS);
    if ("error" in parsedXpubs) problems.push({ variable: "MASTER_XPUBS", message: parsedXpubs.error });
    else accountXpubs = parsedXpubs.xpubs;
  }
  let fees = DEFAULT_FEE_SCHEDULE;
  if (e.FEE_SCHEDULE) {
    const parsedFees = parseFeeSchedule(e.FEE_SCHEDULE);
    if ("error" in parsedFees) problems.push({ variable: "FEE_SCHEDULE", message: parsedFees.error });
    else fees = parsedFees.schedule;
  }
  const sweepThreshold = { erc20: 0n, trc20: 0n };
  for (const [key, variable] of [
    ["erc20", EVM.variables.sweepThreshold],
    ["trc20", TRON.variables.sweepThreshold],
  ] as const) {
    const r = parseAmount(e[variable]);
    if (r.ok) sweepThreshold[key] = r.units;
    else problems.push({ variable, message: `${r.message} (USDT)` });
  }
  const cold: SendingConfig["cold"] = { production: {}, sandbox: {} };
  for (const environment of ["production", "sandbox"] as const) {
    for (const [network, suffix] of [
      ["USDT-ERC20", "ERC20"],
      ["USDT-TRC20", "TRC20"],
    ] as const) {
      const prefix = environment === "sandbox" ? "SANDBOX_" : "";
      const maxVar = `${prefix}HOT_WALLET_MAX_${suffix}` as const;
      const addressVar = `${prefix}COLD_WALLET_${suffix}` as const;
      const max = e[maxVar];
      const address = e[addressVar];
      if (max === undefined && address === undefined) continue;
      if (max === undefined || address === undefined) {
        problems.push({
          variable: max === undefined ? maxVar : addressVar,
          message: `set with ${max === undefined ? addressVar : maxVar}`,
        });
        continue;
      }
      const r = parseAmount(max);
      if (r.ok) cold[environment][network] = { max: r.units, address };
      else problems.push({ variable: maxVar, message: `${r.message} (USDT)` });
    }
  }
  const outflowCap: SendingConfig["outflowCap"] = { perHour: null, perDay: null };
  for (const [key, variable] of [
    ["perHour", "SIGNER_MAX_OUTFLOW_PER_HOUR"],
    ["perDay", "SIGNER_MAX_OUTFLOW_PER_DAY"],
  ] as const) {
    const r = parseOutflowCap(e[variable]);
    if ("error" in r) problems.push({ variable, message: r.error });
    else outflowCap[key] = r.limits;
  }
  if (problems.length > 0) throw new ConfigError(problems);

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
    chains: {
      confirmations: { trc20: e[TRON.variables.confirmations], erc20: e[EVM.variables.confirmations] },
      production: chainEndpoints(e, "production"),
      sandbox: chainEndpoints(e, "sandbox"),
    },
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
      sweepThreshold,
      cold,
      stuckAfterMs: e.SENDER_STUCK_AFTER_SECONDS * 1000,
      tronFeeLimitSun: e[TRON.variables.feeLimit],
    },
  };
}

/** The endpoints of one environment, from the variables the chain modules' definitions name. */
function chainEndpoints(e: RawEnv, environment: "production" | "sandbox"): ChainEndpoints {
  const urls = (single: string | undefined, list: string[] | undefined) => [
    ...new Set([...(single ? [single] : []), ...(list ?? [])]),
  ];
  const erc20RpcUrls = urls(e[EVM.variables.endpoint[environment]], e[EVM.variables.endpoints[environment]]);
  const trc20ApiUrls = urls(
    e[TRON.variables.endpoint[environment]],
    e[TRON.variables.endpoints[environment]],
  );
  return {
    erc20RpcUrl: erc20RpcUrls[0],
    trc20ApiUrl: trc20ApiUrls[0],
    erc20RpcUrls,
    trc20ApiUrls,
    usdtErc20Contract: e[EVM.variables.contract[environment]],
    usdtTrc20Contract: e[TRON.variables.contract[environment]],
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
