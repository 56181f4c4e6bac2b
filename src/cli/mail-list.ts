/** `stablegate mail list`: what the operator reads of the development outbox. */

export interface Outbox {
  total: number;
  mails: { id: string; to: string; subject: string; text: string; createdAt: string }[];
}

/** The mails, newest first, each with its headers and body, separated by a rule. */
export function formatOutbox(outbox: Outbox, smtpConfigured: boolean): string {
  const head = smtpConfigured
    ? "SMTP_URL is set: new mails go out through SMTP; the outbox holds only earlier ones."
    : "The local outbox (SMTP_URL is unset: mails are kept here, nothing is sent).";
  if (outbox.mails.length === 0) return `${head}\nNo mail.`;
  const shown = `${outbox.mails.length} of ${outbox.total}, newest first`;
  const blocks = outbox.mails.map((m) =>
    [`${m.createdAt}  ${m.id}`, `To:      ${m.to}`, `Subject: ${m.subject}`, "", m.text].join("\n"),
  );
  return [`${head} ${shown}.`, ...blocks].join(`\n${"-".repeat(72)}\n`);
}
