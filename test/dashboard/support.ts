import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { call } from "../support/harness.js";

export const ORIGIN = "http://api.stablegate.test";

/** A browser-like client: keeps cookies per path-less jar and sends the dashboard Origin. */
export class Browser {
  cookies = new Map<string, string>();
  lastSetCookie: string[] = [];
  constructor(
    readonly base: string,
    public origin: string | undefined = ORIGIN,
  ) {}

  async req(path: string, init: { method?: string; json?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...init.headers };
    if (this.origin && !headers.origin) headers.origin = this.origin;
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const r = await call(this.base, path, { ...init, headers });
    this.lastSetCookie = r.headers.getSetCookie();
    for (const c of this.lastSetCookie) {
      const [pair = ""] = c.split(";");
      const i = pair.indexOf("=");
      const name = pair.slice(0, i);
      const value = pair.slice(i + 1);
      if (value === "" || /max-age=0|expires=thu, 01 jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return r;
  }
}

export interface ReceivedMail {
  to: string[];
  raw: string;
  subject: string;
  /** Body with quoted-printable soft breaks removed. */
  text: string;
}

/** A real SMTP server (smtp-server) on an ephemeral port, no TLS, no auth. */
export async function startSmtp() {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (c: Buffer) => {
        raw += c.toString("utf8");
      });
      stream.on("end", () => {
        const subject = /^Subject: (.*)$/im.exec(raw)?.[1]?.trim() ?? "";
        const text = raw.replace(/=\r?\n/g, "").replace(/=3D/g, "=");
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, subject, text });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async waitFor(pred: (m: ReceivedMail) => boolean, timeoutMs = 5_000): Promise<ReceivedMail> {
      const start = Date.now();
      for (;;) {
        const m = mails.find(pred);
        if (m) return m;
        if (Date.now() - start > timeoutMs) throw new Error("mail not received");
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function otpFrom(mail: ReceivedMail): string {
  const m = /code: (\d{6})/.exec(mail.subject);
  if (!m?.[1]) throw new Error("no code in mail");
  return m[1];
}

/**
 * Requests an e-mailed code (docs/merchants/authentication.md#step-up-for-production-changes: purpose `sensitive`; or `payout`) for the
 * signed-in browser and reads it from the development outbox (a service without SMTP_URL): the
 * mail that was not there before the request (a frozen test clock gives mails equal times).
 */
export async function outboxOtp(b: Browser, purpose: "sensitive" | "payout" = "sensitive"): Promise<string> {
  const ids = async () => {
    const mail = await b.req("/api/v1/dashboard/dev/mail?limit=100");
    if (mail.status !== 200) throw new Error(`outbox: ${mail.status} ${mail.text.slice(0, 200)}`);
    return mail.body.data as { id: string; subject: string }[];
  };
  const before = new Set((await ids()).map((m) => m.id));
  const r = await b.req("/api/v1/auth/otp", { json: { purpose } });
  if (r.status !== 200) throw new Error(`OTP request refused: ${r.status} ${r.text}`);
  const fresh = (await ids()).filter((m) => !before.has(m.id));
  const code = fresh.length === 1 ? /code: (\d{6})/.exec(fresh[0]?.subject ?? "")?.[1] : undefined;
  if (!code) throw new Error(`no new code in the outbox (${fresh.length} new mails)`);
  return code;
}
