import { AppError } from "../../domain/errors.js";
import { isLoopbackAddress } from "../../lib/loopback.js";
import { escapeHtml } from "../../lib/markdown-html.js";
import { listOutbox } from "../../mail/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { clientIp } from "../client-ip.js";

/**
 * `GET /dev/mail`: the whole local outbox (development without SMTP_URL) for the operator on this
 * machine: invitations, password resets and codes to every address, newest first, so that a
 * flow whose mail goes to someone not signed in (an invitee, a forgotten password) is not a dead
 * end. The dashboard's Mail screen shows only the signed-in user's own mails.
 *
 * It holds live sign-in links, so it answers only outside production mode and only to a client
 * on this machine (a loopback address, after TRUST_PROXY): anyone else gets the 404 of an unknown
 * path. `stablegate mail list` prints the same from a terminal.
 */
export function devMailRoutes(app: App, { config, database }: RouteDeps) {
  if (config.production) return; // unrouted
  app.get("/dev/mail", { config: { tier: "dashboard" }, schema: { hide: true } }, async (request, reply) => {
    if (!isLoopbackAddress(clientIp(request))) throw AppError.notFound();
    const { rows, total } = await listOutbox(database.db, undefined, 100, 0);
    const items = rows
      .map(
        (m) => `<article><h2>${escapeHtml(m.subject)}</h2>
<p class="meta">To <b>${escapeHtml(m.recipient)}</b> · ${escapeHtml(new Date(m.created_at).toISOString())} · ${escapeHtml(m.id)}</p>
<pre>${linkify(m.body)}</pre></article>`,
      )
      .join("\n");
    const note = config.smtpUrl
      ? "SMTP_URL is set: new mails go out through SMTP; this outbox holds only earlier ones."
      : "SMTP_URL is unset: every mail the gateway sends is kept here, nothing leaves this machine.";
    reply
      .type("text/html; charset=utf-8")
      .header("cache-control", "no-store")
      .header("x-content-type-options", "nosniff")
      .header("referrer-policy", "no-referrer")
      .header(
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      );
    return reply.send(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Development outbox · stablegate</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:1.5rem auto;padding:0 1rem;color:#1b1b1b}
article{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}h2{font-size:1.05rem;margin:.4rem 0}
.meta{color:#666;margin:0}pre{white-space:pre-wrap;overflow-wrap:anywhere;font:13px/1.45 ui-monospace,monospace}</style></head>
<body><h1>Development outbox</h1><p>${escapeHtml(note)} ${rows.length} of ${total} mail(s), newest first.
Also in a terminal: <code>npm run stablegate -- mail list</code>.</p>
${items || "<p>No mail yet.</p>"}</body></html>`);
  });
}

/** Escapes a mail body and makes its http(s) links clickable (the escaped text is the link). */
function linkify(text: string): string {
  return escapeHtml(text).replace(/https?:\/\/[^\s<>"']+/g, (url) => `<a href="${url}">${url}</a>`);
}
