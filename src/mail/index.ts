import type { Config } from "../config/config.js";
import type { Db } from "../db/database.js";
import { AppError } from "../domain/errors.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Mail, Mailer } from "./mailer.js";
import { OutboxMailer } from "./outbox.js";
import { SmtpMailer } from "./smtp.js";

export { devOutboxKey, isDevOutboxKey } from "./dev-outbox-key.js";
export type { Mail, Mailer } from "./mailer.js";
export { listOutbox, mailView } from "./outbox.js";

/** Production mode without SMTP_URL: nothing can be mailed (the outbox is for development only). */
class NoMailer implements Mailer {
  readonly kind = "none" as const;
  constructor(private readonly logger: Logger) {}
  async send(_mail: Mail): Promise<void> {
    this.logger.error(
      "cannot send mail: SMTP_URL is not set (the local outbox is refused in production mode)",
    );
    throw new AppError("INTERNAL_ERROR", "Internal server error.");
  }
  async close(): Promise<void> {}
}

export function defaultMailFrom(config: Config): string {
  return config.mailFrom ?? `stablegate <no-reply@${new URL(config.http.productionBaseUrl).hostname}>`;
}

/** SMTP when `SMTP_URL` is set; otherwise the DB outbox outside production mode; otherwise none. */
export function createMailer(config: Config, db: Db, clock: Clock, logger: Logger): Mailer {
  if (config.smtpUrl) return new SmtpMailer(config.smtpUrl, defaultMailFrom(config));
  if (!config.production) return new OutboxMailer(db, clock);
  logger.warn("SMTP_URL is not set: OTP and password-reset mails cannot be sent in production mode");
  return new NoMailer(logger);
}
