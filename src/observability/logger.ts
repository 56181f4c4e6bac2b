import pino, { type DestinationStream, type Logger } from "pino";
import pretty from "pino-pretty";

/**
 * JSON logs. Credentials never reach the log: request headers are not logged at all by the
 * request serializer, query strings are cut from every logged request URL (a link may carry a
 * token there: `?token=…`), and these paths are redacted wherever they appear as defence in depth.
 */
export const REDACT_PATHS = [
  "req.headers.apikey",
  "req.headers['x-api-secret']",
  "req.headers.authorization",
  "req.headers.cookie",
  "res.headers['set-cookie']",
  "headers.apikey",
  "headers['x-api-secret']",
  "headers.authorization",
  "headers.cookie",
  "*.password",
  "*.currentPassword",
  "*.newPassword",
  "*.otp",
  "*.totp",
  "*.apiSecret",
  "*.webhookSecret",
  "*.mnemonic",
  "*.token",
  "*.refreshToken",
];

/** Marks where a query string was cut from a logged URL. */
export const QUERY_REDACTED = "?[redacted]";

/**
 * A request URL as it may be logged: the path, and `?[redacted]` instead of any query. The whole
 * query goes (names as well as values: a client may put a secret in either), so no route can leak
 * one by taking a token in its query.
 */
export function loggableUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q) + QUERY_REDACTED;
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  headers?: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string; remotePort?: number } | null;
}

/**
 * The `req` serializer of every request log line (the one "request completed" line and anything that
 * logs `{ req }`): Fastify's own fields, with the URL's query cut. It replaces Fastify's default
 * serializer (Fastify merges a logger instance's serializers over its own).
 */
function serializeRequest(req: LoggedRequest) {
  return {
    method: req.method,
    url: loggableUrl(req.url),
    host: req.host ?? (typeof req.headers?.host === "string" ? req.headers.host : undefined),
    remoteAddress: req.ip ?? req.socket?.remoteAddress,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * An endpoint URL inside a logged error keeps its scheme and host only: RPC providers put their key
 * in the path (`/v3/<key>`) or the userinfo, and an HTTP client's error text quotes the URL whole
 * (outside review of #40: viem's "URL: https://…/v3/<key>" in "job failed").
 */
const URL_IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)(?:[^\s/?#@'"<>]*@)?([^\s/?#'"<>]+)([/?#][^\s'"<>]*)?/gi;
export const PATH_REDACTED = "/[redacted]";

export function redactUrls<T>(value: T, depth = 0): T {
  if (typeof value === "string")
    return value.replace(URL_IN_TEXT, (_m, scheme: string, host: string, rest?: string) =>
      rest && rest !== "/" ? `${scheme}${host}${PATH_REDACTED}` : `${scheme}${host}${rest ?? ""}`,
    ) as T;
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => redactUrls(v, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactUrls(v, depth + 1);
  return out as T;
}

/** Errors as pino serializes them, with every URL in them cut to its host (`redactUrls`). */
function serializeError(err: unknown) {
  return redactUrls(pino.stdSerializers.err(err as Error));
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(loggerOptions(level), destination);
}

function loggerOptions(level: string) {
  return {
    level,
    base: { service: "stablegate" },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    serializers: { req: serializeRequest, err: serializeError },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
}

/**
 * The logger of a process: JSON lines on stdout, except in development on a terminal, where the
 * same lines are printed readable (pino-pretty, in this thread: one short line per event, the
 * fields after it). `LOG_FORMAT=json` keeps JSON on a terminal too.
 */
export function createProcessLogger(config: {
  logLevel: string;
  logFormat: "auto" | "json";
  production: boolean;
}): Logger {
  const readable = !config.production && process.stdout.isTTY === true && config.logFormat !== "json";
  if (!readable) return createLogger(config.logLevel);
  return pino(
    loggerOptions(config.logLevel),
    pretty({
      sync: true,
      colorize: true,
      translateTime: "SYS:HH:MM:ss",
      ignore: "pid,hostname,service",
      singleLine: true,
    }),
  );
}

export type { Logger };
