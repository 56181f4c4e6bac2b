import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import type { MailOutboxRow } from "../db/tables/dashboard.js";
import { newId } from "../domain/ids.js";
import type { Clock } from "../lib/clock.js";
import type { Mail, Mailer } from "./mailer.js";

/**
 * The local outbox used outside production mode when no `SMTP_URL` is set: mails are rows of
 * `mail_outbox`, so every instance and the tests see them, and the dashboard lists them.
 */
export class OutboxMailer implements Mailer {
  readonly kind = "outbox" as const;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async send(mail: Mail): Promise<void> {
    await this.db
      .insertInto("mail_outbox")
      .values({
        id: newId("mail"),
        recipient: mail.to,
        subject: mail.subject,
        body: mail.text,
        created_at: new Date(this.clock.now()),
      })
      .execute();
  }

  async close(): Promise<void> {}
}

/** The outbox's mails to `recipient` (any case), or every mail when it is undefined (the operator's view). */
export async function listOutbox(
  db: Db,
  recipient: string | undefined,
  limit: number,
  offset: number,
): Promise<{ rows: MailOutboxRow[]; total: number }> {
  const all = db.selectFrom("mail_outbox");
  const where =
    recipient === undefined
      ? all
      : all.where((eb) => eb(eb.fn("lower", ["recipient"]), "=", recipient.toLowerCase()));
  return paginate(where, { limit, offset }, (q) =>
    q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"),
  );
}

/** A mail of the outbox as the dashboard and the operator command show it. */
export function mailView(m: MailOutboxRow): {
  id: string;
  to: string;
  subject: string;
  text: string;
  createdAt: string;
} {
  return {
    id: m.id,
    to: m.recipient,
    subject: m.subject,
    text: m.body,
    createdAt: new Date(m.created_at).toISOString(),
  };
}
