import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { App, RouteDeps } from "../app-types.js";

/** `<repo>/dist/downloads`, from `src/http/routes` (tsx, tests) and `dist/http/routes` alike. */
export const DOWNLOADS_ROOT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../dist/downloads",
);

/** The stable URL of the packed SDK (and its `stablegate-dev` CLI), as the guides give it. */
export const SDK_TARBALL_PATH = "/downloads/stablegate-sdk.tgz";

/**
 * `GET /downloads/stablegate-sdk.tgz`: the `@stablegate/sdk` package of this very gateway, packed
 * by `npm run build` (scripts/pack-sdk.mjs), so a merchant installs the client that matches the
 * API they call with `npm install <base URL>/downloads/stablegate-sdk.tgz`, without the
 * repository or a registry. Public (the package is open source) and counted in the dashboard
 * tier per client. One fixed file name: a request names no path.
 */
export function downloadRoutes(app: App, _deps: RouteDeps, root: string = DOWNLOADS_ROOT) {
  const file = path.join(root, "stablegate-sdk.tgz");
  let cached: { mtimeMs: number; size: number; body: Buffer; etag: string } | undefined;

  app.get(
    SDK_TARBALL_PATH,
    { config: { tier: "dashboard" }, schema: { hide: true } },
    async (request, reply) => {
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile()) {
        return reply
          .code(404)
          .type("text/plain; charset=utf-8")
          .header("cache-control", "no-store")
          .send(
            "The SDK has not been packed on this gateway: run `npm run build` (or `npm start`) to pack it.",
          );
      }
      if (!cached || cached.mtimeMs !== info.mtimeMs || cached.size !== info.size) {
        const body = await readFile(file);
        const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
        cached = { mtimeMs: info.mtimeMs, size: info.size, body, etag };
      }
      reply
        .type("application/gzip")
        .header("content-disposition", 'attachment; filename="stablegate-sdk.tgz"')
        .header("cache-control", "no-cache")
        .header("etag", cached.etag)
        .header("x-content-type-options", "nosniff");
      if (request.headers["if-none-match"] === cached.etag) return reply.code(304).send();
      return reply.send(cached.body);
    },
  );
}
