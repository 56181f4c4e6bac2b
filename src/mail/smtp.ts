import nodemailer, { type Transporter } from "nodemailer";
import type { Mail, Mailer } from "./mailer.js";

/**
 * Mail through the SMTP server of `SMTP_URL` (nodemailer's connection URL: `smtp://user:pass@host:587`,
 * `smtps://…:465`; options such as `?ignoreTLS=true` or `?requireTLS=true` go in the query string).
 */
export class SmtpMailer implements Mailer {
  readonly kind = "smtp" as const;
  readonly #transport: Transporter;

  constructor(
    url: string,
    private readonly from: string,
  ) {
    this.#transport = nodemailer.createTransport(url);
  }

  async send(mail: Mail): Promise<void> {
    await this.#transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text });
  }

  async close(): Promise<void> {
    this.#transport.close();
  }
}
