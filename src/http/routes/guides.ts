import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Type } from "@sinclair/typebox";
import type { FastifyReply } from "fastify";
import { AppError } from "../../domain/errors.js";
import { escapeHtml, markdownToHtml } from "../../lib/markdown-html.js";
import type { App, RouteDeps } from "../app-types.js";
import { docsBasicAuth } from "../docs-auth.js";

/** `<repo>/docs/merchants`, from `src/http/routes` (tsx, tests) and `dist/http/routes` alike. */
export const GUIDES_ROOT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../docs/merchants",
);

const PREFIX = "/docs/guides";
const NAME = /^[a-z0-9-]+$/;

/**
 * The merchant guides (docs/merchants/*.md) at `/docs/guides` (the index) and
 * `/docs/guides/{name}` (rendered HTML; `{name}.md` gives the Markdown source), behind the same
 * HTTP basic auth as the API reference (DOCS_USER, DOCS_PASSWORD); without them, unrouted (404).
 *
 * The guides are read once at start-up into a map keyed by file name: a request can only name one
 * of those keys, never a path (no traversal, whatever the encoding). HTML is rendered by the
 * escaping renderer of `lib/markdown-html.ts` and served with a CSP that allows no script.
 */
export function guidesRoutes(app: App, { config }: RouteDeps) {
  const { user, password } = config.docs;
  if (!user || !password) return;
  const guides = loadGuides(GUIDES_ROOT);

  const basicAuth = docsBasicAuth(config.docs, "The guides");

  const send = (reply: FastifyReply, name: string, raw: boolean) => {
    const source = guides.get(name);
    if (source === undefined) throw AppError.notFound("No guide with this name.");
    reply
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'");
    if (raw) return reply.type("text/markdown; charset=utf-8").send(source);
    return reply.type("text/html; charset=utf-8").send(page(source, name));
  };

  const options = {
    config: { tier: "dashboard" as const },
    schema: { hide: true },
    onRequest: basicAuth,
  };
  app.get(PREFIX, options, async (_request, reply) => send(reply, "README", false));
  app.get(`${PREFIX}/`, options, async (_request, reply) => send(reply, "README", false));
  app.get(
    `${PREFIX}/:name`,
    { ...options, schema: { hide: true, params: Type.Object({ name: Type.String({ maxLength: 100 }) }) } },
    async (request, reply) => {
      const { name } = request.params;
      const raw = name.endsWith(".md");
      const key = raw ? name.slice(0, -3) : name;
      return send(reply, NAME.test(key) || key === "README" ? key : "", raw);
    },
  );
}

/** Every `*.md` of the folder by name (without `.md`); an absent folder is no guides. */
function loadGuides(root: string): Map<string, string> {
  const guides = new Map<string, string>();
  let files: string[];
  try {
    files = readdirSync(root);
  } catch {
    return guides;
  }
  for (const file of files) {
    const name = file.replace(/\.md$/, "");
    if (file.endsWith(".md") && (NAME.test(name) || name === "README")) {
      guides.set(name, readFileSync(path.join(root, file), "utf8"));
    }
  }
  return guides;
}

function page(markdown: string, name: string): string {
  const title = /^#\s+(.+)$/m.exec(markdown)?.[1] ?? name;
  const body = markdownToHtml(markdown, (guide) => `${PREFIX}/${guide}`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · stablegate</title>
<style>
body{font:16px/1.55 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
pre{background:#f6f6f6;padding:.8rem;overflow:auto;border-radius:4px}code{font:14px ui-monospace,monospace}
table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #ddd;padding:.35rem .6rem;text-align:left;vertical-align:top}
nav{margin-bottom:1.5rem}a{color:#0b63c5}
</style></head><body>
<nav><a href="${PREFIX}">Guides</a> · <a href="/docs">API reference</a> · <a href="${PREFIX}/${escapeHtml(name)}.md">Markdown source</a></nav>
<main>
${body}
</main></body></html>`;
}
