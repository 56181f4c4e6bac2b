import pino, { type DestinationStream, type Logger } from "pino";

/**
 * JSON logs. Credentials never reach the log: request headers are not logged at all by the
 * request serializer, and these paths are redacted wherever they appear as defence in depth.
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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "stablegate" },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };
