import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { App, RouteDeps } from "../app-types.js";

/**
 * The merchant dashboard (issue #10): the single-page app built by Vite from `web/` into
 * `dist/web/`, served by the service itself at `/` on both listeners.
 *
 * A small hand-written handler rather than @fastify/static (not installed, and we need little):
 * - only explicit paths are routes — `/`, the app's client routes (each also with a `/*` tail, so a
 *   reload of a deep link gets `index.html`), `/assets/*` and a few root files. No catch-all: unknown
 *   paths keep the API's JSON 404 and their rate-limit tier, and `/api`, `/docs`, `/pay`,
 *   `/checkout`, `/wallet`, `/healthz`, `/readyz`, `/metrics` can never be shadowed;
 * - files are read only from inside `dist/web`: the path is resolved and must stay below the root
 *   (`..`, encoded slashes, absolute paths and NUL bytes are refused), so no request can read any
 *   other file of the machine (path traversal);
 * - hashed assets (`/assets/name-<hash>.js`) are immutable for a year; `index.html` is revalidated on
 *   every load (`no-cache` + ETag) so a new build is picked up at once;
 * - text files are gzipped once per file version and served compressed when the browser accepts it.
 */

/** Client-side routes of `web/src/main.tsx`; a test loads each by URL. Keep the two lists equal. */
export const CLIENT_ROUTES = [
  "login",
  "signup",
  "forgot-password",
  "reset-password",
  "accept-invite",
  "transactions",
  "sessions",
  "payment-links",
  "withdrawals",
  "payouts",
  "webhooks",
  "api-keys",
  "settings",
  "team",
  "audit-log",
  "mail",
] as const;

/** Files of Vite's `public/` copied to the root of the build. */
const ROOT_FILES = ["favicon.svg"] as const;

/** Where the build lands: `<repo>/dist/web` — from `src/http/routes` (tsx, tests) and `dist/http/routes` alike. */
export const WEB_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../dist/web");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".webp": "image/webp",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};
const COMPRESSIBLE = new Set([".html", ".js", ".mjs", ".css", ".json", ".map", ".svg", ".txt"]);

/** The page's policy: scripts and styles from this origin only; QR codes are data: images. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

interface Loaded {
  body: Buffer;
  gzip: Buffer | undefined;
  etag: string;
}

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>stablegate</title>
<p>The stablegate API is running, but the dashboard has not been built.
Run <code>npm run build</code> (or <code>npm start</code>) to build it into <code>dist/web</code>.</p>`;

export function staticWebRoutes(app: App, _deps: RouteDeps, root: string = WEB_ROOT) {
  const cache = new Map<string, { mtimeMs: number; size: number; file: Loaded }>();

  /** The absolute path of a request path inside the root, or undefined when it would leave it. */
  function inside(relative: string): string | undefined {
    // Only plain, normalised relative paths: no `.`/`..` segments, no absolute path, no NUL, no `\`.
    if (relative.includes("\0") || relative.includes("\\") || relative.startsWith("/")) return undefined;
    if (path.posix.normalize(relative) !== relative) return undefined;
    const file = path.resolve(root, `.${path.posix.sep}${relative}`);
    return file.startsWith(root + path.sep) ? file : undefined;
  }

  async function load(file: string, ext: string): Promise<Loaded | undefined> {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(file);
    } catch {
      return undefined;
    }
    if (!info.isFile()) return undefined;
    const hit = cache.get(file);
    if (hit && hit.mtimeMs === info.mtimeMs && hit.size === info.size) return hit.file;
    const body = await readFile(file);
    const loaded: Loaded = {
      body,
      gzip: COMPRESSIBLE.has(ext) && body.length > 512 ? gzipSync(body) : undefined,
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`,
    };
    cache.set(file, { mtimeMs: info.mtimeMs, size: info.size, file: loaded });
    return loaded;
  }

  async function send(
    request: FastifyRequest,
    reply: FastifyReply,
    relative: string,
    cacheControl: string,
  ): Promise<FastifyReply> {
    const file = inside(relative);
    const ext = path.extname(relative).toLowerCase();
    const loaded = file ? await load(file, ext) : undefined;
    if (!loaded) {
      if (relative === "index.html")
        return reply
          .code(404)
          .type(TYPES[".html"] as string)
          .send(NOT_BUILT);
      return reply
        .code(404)
        .type("text/plain; charset=utf-8")
        .header("cache-control", "no-store")
        .send("Not found.");
    }
    reply.header("content-type", TYPES[ext] ?? "application/octet-stream");
    reply.header("cache-control", cacheControl);
    reply.header("etag", loaded.etag);
    if (ext === ".html") {
      reply.header("content-security-policy", CSP);
      reply.header("x-frame-options", "DENY");
      reply.header("referrer-policy", "same-origin");
    }
    if (request.headers["if-none-match"] === loaded.etag) return reply.code(304).send();
    if (loaded.gzip) {
      reply.header("vary", "Accept-Encoding");
      if (/\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""))) {
        reply.header("content-encoding", "gzip");
        return reply.send(loaded.gzip);
      }
    }
    return reply.send(loaded.body);
  }

  const options = { config: { tier: false as const }, schema: { hide: true } };
  const page = (request: FastifyRequest, reply: FastifyReply) =>
    send(request, reply, "index.html", "no-cache");

  app.get("/", options, page);
  for (const route of CLIENT_ROUTES) {
    app.get(`/${route}`, options, page);
    app.get(`/${route}/*`, options, page);
  }
  app.get("/assets/*", options, (request, reply) => {
    const rest = (request.params as { "*": string })["*"];
    return send(request, reply, `assets/${rest}`, "public, max-age=31536000, immutable");
  });
  for (const name of ROOT_FILES) {
    app.get(`/${name}`, options, (request, reply) => send(request, reply, name, "public, max-age=3600"));
  }
}
