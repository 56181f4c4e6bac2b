import cors from "@fastify/cors";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Config } from "../../config/config.js";
import { AppError } from "../../domain/errors.js";

/**
 * CORS for the dashboard (docs/decisions/security.md): the browser may call dashboard, auth, admin and
 * webhook-management routes from the origins of `CORS_ORIGINS`, with credentials. API-key paths
 * are exempt: they get no CORS headers at all (server-to-server; a secret never belongs in a browser).
 *
 * Whether a request is on a browser route is read from the route the router matched (its declared
 * template), never from the URL text: `/api/v1/%61uth/login` is the login route and gets its
 * Origin check. The one exception is a preflight, which no route of ours answers (the `OPTIONS *`
 * route of @fastify/cors): it is answered from its path, and grants nothing by itself — the
 * browser reads the real response only if that response's own headers, decided by its matched
 * route, allow it; a spelling the preflight does not recognise just gets no CORS headers.
 */
const BROWSER_PATHS = ["/api/v1/auth/", "/api/v1/dashboard/", "/api/v1/admin/", "/api/v1/webhook/"];
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

function isBrowserPath(path: string): boolean {
  return BROWSER_PATHS.some((p) => path.startsWith(p));
}

/** The request's matched route is a dashboard-channel (browser) route; see above for preflights. */
export function isBrowserRoute(request: FastifyRequest): boolean {
  const template = request.routeOptions.url;
  if (template === undefined) return false; // no route: answered 404
  if (template === "*" && request.method === "OPTIONS") return isBrowserPath(request.url);
  return isBrowserPath(template);
}

export function isSafeMethod(method: string): boolean {
  return SAFE_METHODS.has(method);
}

/** The caller's origin: `Origin`, else the origin of `Referer`; undefined when neither is sent. */
function requestOrigin(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (typeof origin === "string" && origin !== "") return origin;
  const referer = request.headers.referer;
  if (typeof referer === "string" && referer !== "") {
    try {
      return new URL(referer).origin;
    } catch {
      return "null";
    }
  }
  return undefined;
}

/**
 * The Origin check of cookie-authenticated writes (CSRF defence beside `sameSite`): a write whose
 * origin is not allowed is refused; when the session came from a cookie the origin must be present.
 */
export function assertWriteOrigin(
  request: FastifyRequest,
  allowed: ReadonlySet<string>,
  mustBePresent: boolean,
) {
  if (isSafeMethod(request.method)) return;
  const origin = requestOrigin(request);
  if (origin === undefined) {
    if (mustBePresent)
      throw AppError.forbidden("Cookie-authenticated writes need an Origin header from an allowed origin.");
    return;
  }
  if (!allowed.has(origin)) throw AppError.forbidden(`Origin ${origin} is not allowed.`);
}

export function allowedOrigins(config: Config): ReadonlySet<string> {
  return new Set(config.corsOrigins.map((o) => o.replace(/\/+$/, "")));
}

export async function registerCors(app: FastifyInstance, config: Config) {
  const origins = allowedOrigins(config);
  // An OPTIONS to a browser route that is no preflight (no Origin or no requested method) is a bad
  // request in the contract's envelope (@fastify/cors's strict mode answers it in plain text; an
  // outside review found it). Runs before the plugin's own hook, added next.
  app.addHook("onRequest", async (request) => {
    if (request.method !== "OPTIONS" || !isBrowserRoute(request)) return;
    const missing = ["origin", "access-control-request-method"].filter((h) => !request.headers[h]);
    if (missing.length > 0)
      throw AppError.validation(
        missing.map((h) => ({ field: h, message: "is required in a CORS preflight (an OPTIONS request)" })),
      );
  });
  await app.register(cors, {
    hook: "onRequest",
    delegator: (request, callback) => {
      if (!isBrowserRoute(request)) {
        callback(null, { origin: false });
        return;
      }
      callback(null, {
        origin: [...origins],
        credentials: true,
        methods: ["GET", "POST", "PATCH", "DELETE"],
        allowedHeaders: ["Content-Type", "Authorization", "X-Environment", "X-Request-Id", "Idempotency-Key"],
        exposedHeaders: [
          "X-Request-Id",
          "RateLimit-Limit",
          "RateLimit-Remaining",
          "RateLimit-Reset",
          "RateLimit-Policy",
          "Retry-After",
          "Idempotent-Replayed",
        ],
        maxAge: 600,
      });
    },
  });
  // Writes to browser paths from a foreign origin are refused whatever the credentials.
  app.addHook("onRequest", async (request) => {
    if (isBrowserRoute(request)) assertWriteOrigin(request, origins, false);
  });
}
