/** `stablegate mail list`: what the operator reads of the development outbox. */

export interface Outbox {
  total: number;
  mails: { id: string; to: string; subject: string; text: string; createdAt: string }[];
}

/**
 * Control characters (C0 but tab and newline, DEL, C1) as visible escapes: a mail's text (a company
 * name in an invitation) is written by a user and must not drive the operator's terminal.
 */
export function printable(text: string): string {
  let out = "";
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    const control = (c < 0x20 && ch !== "\n" && ch !== "\t") || (c >= 0x7f && c <= 0x9f);
    out += control ? `\\u${c.toString(16).padStart(4, "0")}` : ch;
  }
  return out;
}

/** The mails, newest first, each with its headers and body, separated by a rule. */
export function formatOutbox(outbox: Outbox, smtpConfigured: boolean, pageUrl?: string): string {
  const head = smtpConfigured
    ? "SMTP_URL is set: new mails go out through SMTP; the outbox holds only earlier ones."
    : "The local outbox (SMTP_URL is unset: mails are kept here, nothing is sent).";
  const page = pageUrl ? `\nIn a browser on this machine: ${pageUrl}` : "";
  if (outbox.mails.length === 0) return `${head}${page}\nNo mail.`;
  const shown = `${outbox.mails.length} of ${outbox.total}, newest first${page}`;
  const blocks = outbox.mails.map((m) =>
    [
      `${m.createdAt}  ${m.id}`,
      `To:      ${printable(m.to)}`,
      `Subject: ${printable(m.subject)}`,
      "",
      printable(m.text),
    ].join("\n"),
  );
  return [`${head} ${shown}.`, ...blocks].join(`\n${"-".repeat(72)}\n`);
}
