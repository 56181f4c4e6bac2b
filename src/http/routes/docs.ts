import scalar from "@scalar/fastify-api-reference";
import { Type } from "@sinclair/typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../../domain/errors.js";
import { safeEqual } from "../../lib/crypto.js";
import type { App, RouteDeps } from "../app-types.js";

/**
 * `/docs` (interactive reference, Scalar, served from the package — no CDN) and `/docs/openapi.json`
 * (OpenAPI 3.1 generated from the route schemas), both behind HTTP basic auth (CONTRACT §9).
 * Without DOCS_USER/DOCS_PASSWORD both answer 404.
 */
export function docsRoutes(app: App, { config }: RouteDeps) {
  const { user, password } = config.docs;

  const basicAuth = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!user || !password) throw AppError.notFound();
    const [scheme, encoded] = (request.headers.authorization ?? "").split(" ");
    const decoded = scheme === "Basic" && encoded ? Buffer.from(encoded, "base64").toString("utf8") : "";
    const sep = decoded.indexOf(":");
    const ok =
      sep > 0 && safeEqual(decoded.slice(0, sep), user) && safeEqual(decoded.slice(sep + 1), password);
    if (!ok) {
      reply.header("WWW-Authenticate", 'Basic realm="stablegate API reference"');
      throw AppError.invalidAuth("The API reference requires a user name and password.");
    }
  };

  app.get(
    "/docs/openapi.json",
    {
      config: { tier: "dashboard" },
      schema: { hide: true, response: { 200: Type.Object({}, { additionalProperties: true }) } },
      onRequest: basicAuth,
    },
    async () => app.swagger() as unknown as Record<string, unknown>,
  );

  if (!user || !password) return; // `/docs` stays unrouted: 404
  app.register(async (scoped) => {
    scoped.addHook("onRequest", async (request, reply) => {
      // The reference's own routes are limited like the document (Dashboard tier is set by path rules).
      await basicAuth(request, reply);
    });
    await scoped.register(scalar, {
      routePrefix: "/docs",
      // The document is served by the route above; Scalar's copies live under /docs/reference.*.
      openApiDocumentEndpoints: { json: "/reference.json", yaml: "/reference.yaml" },
      configuration: {
        url: "/docs/openapi.json",
        pageTitle: "stablegate API reference",
        hideClientButton: false,
      },
      logLevel: "warn",
    });
  });
}
