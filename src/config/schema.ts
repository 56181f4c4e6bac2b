import { z } from "zod";
import { validateAllowlistEntry } from "../domain/ip-allowlist.js";
import { DEFAULT_WEBHOOK_PORTS } from "../domain/webhook-ports.js";

/**
 * The configuration schema: every configuration name (README.md#configuration) plus the few operator settings the
 * foundation needs. Parsed once at start-up by `loadConfig`; nothing else reads the environment.
 */

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");
const url = z.string().url();
const optionalUrl = url.optional();
const csv = z.string().transform((s) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0),
);

/**
 * `TRUST_PROXY` (docs/decisions/security.md): unset/`false`/`0` — the socket address is the client; a hop count
 * (`true` = 1) — that many proxies each append the address they received from to X-Forwarded-For,
 * so the client is the entry the outermost one appended, counted from the right; or a comma list
 * of the proxies' addresses/CIDRs — entries are skipped from the right while they are listed.
 */
const trustProxy = z.string().transform((raw, ctx): false | number | string[] => {
  const value = raw.trim();
  if (value === "false" || value === "0") return false;
  if (value === "true") return 1;
  if (/^[1-9]\d?$/.test(value)) return Number(value);
  const entries = value.split(",").map((e) => e.trim());
  const bad = entries.find((e) => validateAllowlistEntry(e) !== null);
  if (bad === undefined) return entries;
  ctx.addIssue({
    code: z.ZodIssueCode.custom,
    message: `must be false, a hop count 1-99 (true = 1) or a comma list of proxy addresses/CIDRs; "${bad}" is none of these`,
  });
  return z.NEVER;
});

export const envSchema = z.object({
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** `json` keeps JSON lines on a development terminal too (readable lines otherwise there). */
  LOG_FORMAT: z.enum(["auto", "json"]).default("auto"),

  PORT: port.default(8080),
  SANDBOX_PORT: port.default(8081),
  HOST: z.string().min(1).default("127.0.0.1"),
  PRODUCTION_BASE_URL: optionalUrl,
  SANDBOX_BASE_URL: optionalUrl,
  TRUST_PROXY: trustProxy.default("false"),
  BODY_LIMIT_BYTES: positiveInt.default(65_536),

  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: optionalUrl,
  DATABASE_POOL_SIZE: positiveInt.default(10),
  REDIS_URL: optionalUrl,
  REDIS_KEY_PREFIX: z.string().default("stablegate:"),
  SMTP_URL: optionalUrl,
  /** Sender of OTP and password-reset mails; default `stablegate <no-reply@host of PRODUCTION_BASE_URL>`. */
  MAIL_FROM: z.string().min(3).optional(),

  RATE_LIMIT_ENABLED: bool.default("true"),
  RATE_LIMIT_WINDOW_SECONDS: positiveInt.default(900),
  RATE_LIMIT_AUTH: positiveInt.default(15),
  RATE_LIMIT_FINANCIAL: positiveInt.default(30),
  RATE_LIMIT_WALLET: positiveInt.default(20),
  RATE_LIMIT_STANDARD: positiveInt.default(100),
  RATE_LIMIT_DASHBOARD: positiveInt.default(200),
  RATE_LIMIT_PUBLIC_PAGE: positiveInt.default(60),

  // Seconds; fractions allowed (tests run the schedule in fractions of a second).
  WEBHOOK_RETRY_SCHEDULE: csv
    .pipe(z.array(z.coerce.number().positive().finite()).min(1))
    .default("60,300,1800,7200,43200"),
  WEBHOOK_TIMEOUT_MS: positiveInt.default(10_000),
  SSRF_ALLOW_CIDRS: csv.default(""),
  WEBHOOK_ALLOWED_PORTS: csv
    .pipe(z.array(z.coerce.number().int().min(1).max(65535)).min(1))
    .default(DEFAULT_WEBHOOK_PORTS.join(",")),
  // The webhook stream (`stablegate-dev listen`): open streams per API key, per merchant and in
  // total, counted across instances; the longest a stream lives; how often an open stream is
  // re-authorised besides on access changes (seconds; fractions: tests).
  WEBHOOK_STREAM_MAX_PER_KEY: positiveInt.default(5),
  WEBHOOK_STREAM_MAX_PER_MERCHANT: positiveInt.default(10),
  WEBHOOK_STREAM_MAX_TOTAL: positiveInt.default(200),
  WEBHOOK_STREAM_MAX_LIFETIME_SECONDS: z.coerce.number().positive().finite().default(3600),
  WEBHOOK_STREAM_REAUTH_SECONDS: z.coerce.number().positive().finite().max(60).default(5),
  CHECKOUT_MIN_EXPIRY_SECONDS: positiveInt.default(300),
  LATE_PAYMENT_WATCH_HOURS: positiveInt.default(168),
  // How long an Idempotency-Key claim outlives its request's last heartbeat (fractions: tests).
  IDEMPOTENCY_LEASE_SECONDS: z.coerce.number().positive().finite().default(120),
  // Each network's variables (`CURRENCY_TYPES`, `<NETWORK>_RPC_URLS`, …) are read by `config/chains.ts`
  // from the registry (`domain/currency.ts`), not listed here.

  MASTER_MNEMONIC: z.string().optional(),
  MASTER_MNEMONIC_FILE: z.string().optional(),
  /** Account extended public keys for the roles that do not sign (docs/decisions/custody-and-faults.md#key-custody; `config/xpubs.ts`). */
  MASTER_XPUBS: z.string().optional(),
  SECRET_ENCRYPTION_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, "must be 32 bytes as 64 hex characters")
    .optional(),
  JWT_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  INTERNAL_SHARED_SECRET: z.string().min(32, "must be at least 32 characters").optional(),

  DOCS_USER: z.string().optional(),
  DOCS_PASSWORD: z.string().optional(),
  CORS_ORIGINS: csv.optional(),
  FEE_SCHEDULE: z.string().optional(),
  OTP_TTL_SECONDS: positiveInt.default(600),
  // Days an audit record is kept; 0 keeps every record (the default: evidence is not thrown away
  // unless the operator says so). At least 30 when set: the database refuses to purge newer records
  // (migration 0028).
  AUDIT_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .refine((d) => d === 0 || d >= 30, "0 (keep every record) or at least 30 days")
    .default(0),
  /** Reserve reconciliation (issue #22): how often each chain is checked, and the shortfall tolerated (USDT). */
  RESERVE_CHECK_SECONDS: z.coerce.number().int().min(0).default(300),
  RESERVE_TOLERANCE: z
    .string()
    .regex(/^\d+(\.\d{1,6})?$/, "must be an amount of USDT (at most 6 decimals)")
    .default("0"),
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(25_000),
  // Sending (chains part 2): where workers reach the signer role, where the signer listens, sweeps.
  SIGNER_URL: optionalUrl,
  SIGNER_HOST: z.string().min(1).default("127.0.0.1"),
  SIGNER_PORT: port.default(8090),
  // The signer's outflow cap (issue #34, docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11): `config/outflow-cap.ts`.
  SIGNER_MAX_OUTFLOW_PER_HOUR: z.string().optional(),
  SIGNER_MAX_OUTFLOW_PER_DAY: z.string().optional(),
  SENDER_STUCK_AFTER_SECONDS: positiveInt.default(180),
  // The optional screening provider (issue #40, docs/screening.md): unset, screening is off.
  SCREENING_URL: url
    // (The refinement runs after a failed `url` check too: an unparsable URL is that check's.)
    .refine((u) => !URL.canParse(u) || /^https?:$/.test(new URL(u).protocol), "must be an http or https URL")
    .optional(),
  /** Sent as `Authorization: Bearer <SCREENING_TOKEN>`; a secret, never logged. */
  SCREENING_TOKEN: z.string().optional(),
  SCREENING_TIMEOUT_MS: positiveInt.default(3000),
  /** What a provider error decides: `closed` refuses (the default), `open` allows. */
  SCREENING_ON_ERROR: z.enum(["closed", "open"]).default("closed"),
  /** How long a provider's answer is kept; 0: never cached. */
  SCREENING_CACHE_SECONDS: z.coerce.number().int().min(0).default(3600),
  // Prices in fiat (docs/decisions/prices.md): where exchange rates come from, the operator's own
  // (`FIXED_RATES`: token units per unit of fiat, e.g. EUR=1.08,GBP=1.27; parsed by config.ts) or a
  // public ticker; the oldest quote a session may lock; a ticker's API root (tests: a local fake)
  // and the longest one of its requests may take.
  EXCHANGE_RATE_SOURCE: z.enum(["fixed", "coinbase", "kraken"]).default("fixed"),
  FIXED_RATES: z.string().default(""),
  EXCHANGE_RATE_MAX_AGE_SECONDS: positiveInt.default(300),
  EXCHANGE_RATE_URL: url
    .refine((u) => !URL.canParse(u) || /^https?:$/.test(new URL(u).protocol), "must be an http or https URL")
    .optional(),
  EXCHANGE_RATE_TIMEOUT_MS: positiveInt.default(3000),
});

export type RawEnv = z.infer<typeof envSchema>;
