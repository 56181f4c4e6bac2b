import { createHmac } from "node:crypto";
import type { Config } from "../config/config.js";
import type { Db } from "../db/database.js";
import type { Clock } from "../lib/clock.js";
import { SecretBox } from "../lib/secret-box.js";
import { createMailer, type Mailer } from "../mail/index.js";
import type { Logger } from "../observability/logger.js";
import { AccessTokens } from "./access-tokens.js";
import { OtpService } from "./otp.js";

/** What the dashboard channel needs, built once per runtime (`runtime.ts`) from its dependencies. */
export interface AuthKit {
  config: Config;
  db: Db;
  clock: Clock;
  logger: Logger;
  tokens: AccessTokens;
  box: SecretBox;
  otp: OtpService;
  mailer: Mailer;
  now(): Date;
}

export interface AuthKitDeps {
  config: Config;
  db: Db;
  clock: Clock;
  logger: Logger;
  secrets: { JWT_SECRET: string; SECRET_ENCRYPTION_KEY: string };
}

export function createAuthKit(deps: AuthKitDeps): AuthKit {
  const { config, db, clock, logger } = deps;
  const encryptionKey = deps.secrets.SECRET_ENCRYPTION_KEY;
  // A key of its own for OTP hashing, derived from the encryption key (domain separation).
  const otpKey = createHmac("sha256", Buffer.from(encryptionKey, "hex")).update("stablegate/otp/v1").digest();
  return {
    config,
    db,
    clock,
    logger,
    tokens: new AccessTokens(deps.secrets.JWT_SECRET, clock),
    box: new SecretBox(encryptionKey),
    otp: new OtpService(db, otpKey, config.otpTtlSeconds),
    mailer: createMailer(config, db, clock, logger),
    now: () => new Date(clock.now()),
  };
}
