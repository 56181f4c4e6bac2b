/** Outgoing e-mail (OTPs, password resets). Implementations: SMTP and the local outbox. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  readonly kind: "smtp" | "outbox" | "none";
  send(mail: Mail): Promise<void>;
  close(): Promise<void>;
}
