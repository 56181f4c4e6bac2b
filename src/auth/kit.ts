import { createHmac } from "node:crypto";
import type { Config } from "../config/config.js";
import type { Db } from "../db/database.js";
import type { RouteDeps } from "../http/app-types.js";
import type { Clock } from "../lib/clock.js";
import { SecretBox } from "../lib/secret-box.js";
import { createMailer, type Mailer } from "../mail/index.js";
import type { Logger } from "../observability/logger.js";
import { AccessTokens } from "./access-tokens.js";
import { OtpService } from "./otp.js";

/** What the dashboard channel needs, built once per application from its dependencies. */
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

const kits = new WeakMap<RouteDeps, AuthKit>();

export function authKit(deps: RouteDeps): AuthKit {
  let kit = kits.get(deps);
  if (!kit) {
    const db = deps.database.db;
    const encryptionKey = deps.secrets.SECRET_ENCRYPTION_KEY;
    // A key of its own for OTP hashing, derived from the encryption key (domain separation).
    const otpKey = createHmac("sha256", Buffer.from(encryptionKey, "hex"))
      .update("stablegate/otp/v1")
      .digest();
    kit = {
      config: deps.config,
      db,
      clock: deps.clock,
      logger: deps.logger,
      tokens: new AccessTokens(deps.secrets.JWT_SECRET, deps.clock),
      box: new SecretBox(encryptionKey),
      otp: new OtpService(db, otpKey, deps.config.otpTtlSeconds),
      mailer: createMailer(deps.config, db, deps.clock, deps.logger),
      now: () => new Date(deps.clock.now()),
    };
    kits.set(deps, kit);
  }
  return kit;
}
