import { isLoopbackAddress } from "../../lib/loopback.js";
import { escapeHtml } from "../../lib/markdown-html.js";
import { isDevOutboxKey, listOutbox } from "../../mail/index.js";
import type { App, RouteDeps } from "../app-types.js";

/**
 * `GET /dev/mail?key=…`: the whole local outbox (development without SMTP_URL) for the operator on
 * this machine: invitations, password resets and codes to every address, newest first, so that a
 * flow whose mail goes to someone not signed in (an invitee, a forgotten password) is not a dead
 * end. The dashboard's Mail screen shows only the signed-in user's own mails.
 *
 * It holds live sign-in links, so every one of these must hold, else it answers exactly as an
 * unknown path does (the same 404, the same rate-limit tier: it cannot be told apart):
 * - outside production mode (in production mode it is not routed at all);
 * - the key of this installation (`devOutboxKey`, derived from the JWT secret in DATA_DIR's 0600
 *   secrets file): the start-up banner and `stablegate mail list` print the URL with it, so another
 *   user of a shared machine, a local tunnel or reverse proxy relaying the internet from 127.0.0.1,
 *   or a page rebinding its DNS name to 127.0.0.1 gets nothing without it;
 * - a connection from a loopback address (the socket's own peer, never a forwarded header) with
 *   no header a proxy adds (Forwarded, Via, X-Forwarded-*, X-Real-IP, CDN client-IP headers);
 * - a loopback Host (`localhost`, `127.0.0.1`, `[::1]`) naming this listener's port, if any: a
 *   rebound name is refused.
 */
export function devMailRoutes(app: App, { config, database, secrets }: RouteDeps) {
  if (config.production) return; // unrouted
  // Only links to this gateway become clickable (a mail's text may carry anyone's URL).
  const ownOrigins = [config.http.sandboxBaseUrl, config.http.productionBaseUrl, ...config.corsOrigins];
  const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i;
  // Any header a proxy or CDN adds on the way: a request that carries one did not start here.
  const PROXY_HEADER =
    /^(forwarded|via|x-forwarded-.*|x-real-ip|x-client-ip|x-cluster-client-ip|x-original-forwarded-for|true-client-ip|cf-connecting-ip|fastly-client-ip|x-appengine-user-ip)$/;
  app.get(
    "/dev/mail",
    // No querystring schema: a malformed query must get the same 404 as a wrong key, not a 400.
    { config: { tier: "standard" }, schema: { hide: true } },
    async (request, reply) => {
      const h = request.headers;
      const host = LOOPBACK_HOST.exec(h.host ?? "");
      const allowed =
        isDevOutboxKey(secrets.JWT_SECRET, (request.query as { key?: unknown }).key) &&
        isLoopbackAddress(request.socket.remoteAddress ?? "") &&
        !Object.keys(h).some((name) => PROXY_HEADER.test(name)) &&
        host !== null &&
        (host[2] === undefined || Number(host[2].slice(1)) === request.socket.localPort);
      if (!allowed) return reply.callNotFound();
      const { rows, total } = await listOutbox(database.db, undefined, 100, 0);
      const items = rows
        .map(
          (m) => `<article><h2>${escapeHtml(m.subject)}</h2>
<p class="meta">To <b>${escapeHtml(m.recipient)}</b> · ${escapeHtml(new Date(m.created_at).toISOString())} · ${escapeHtml(m.id)}</p>
<pre>${linkify(m.body, ownOrigins)}</pre></article>`,
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
    },
  );
}

/** Escapes a mail body and makes its links to this gateway clickable (the escaped text is the link). */
function linkify(text: string, origins: readonly string[]): string {
  return escapeHtml(text).replace(/https?:\/\/[^\s<>"']+/g, (url) =>
    origins.some((o) => url === o || url.startsWith(`${o}/`)) ? `<a href="${url}">${url}</a>` : url,
  );
}
