import scalar from "@scalar/fastify-api-reference";
import { Type } from "@sinclair/typebox";
import type { App, RouteDeps } from "../app-types.js";
import { docsBasicAuth } from "../docs-auth.js";

/**
 * `/docs` (interactive reference, Scalar, served from the package — no CDN) and `/docs/openapi.json`
 * (OpenAPI 3.1 generated from the route schemas), both behind HTTP basic auth (docs/decisions/developer-kit.md#the-document).
 * Without DOCS_USER/DOCS_PASSWORD both answer 404.
 */
export function docsRoutes(app: App, { config }: RouteDeps) {
  const { user, password } = config.docs;

  const basicAuth = docsBasicAuth(config.docs, "The API reference");

  app.get(
    "/docs/openapi.json",
    {
      config: { tier: "dashboard" },
      schema: { hide: true, response: { 200: Type.Object({}, { additionalProperties: true }) } },
      onRequest: basicAuth,
    },
    async (request) => {
      // The server the reader came through is listed first, so "Try it" from the sandbox's /docs
      // sends to the sandbox (a reference tool picks the first server by default).
      const doc = app.swagger() as unknown as { servers?: { url: string }[] } & Record<string, unknown>;
      const own =
        request.environment === "sandbox" ? config.http.sandboxBaseUrl : config.http.productionBaseUrl;
      const mine = (s: { url: string }) => s.url === own;
      const servers = doc.servers ?? [];
      return { ...doc, servers: [...servers.filter(mine), ...servers.filter((s) => !mine(s))] };
    },
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
        // Scalar's default fonts come from its own CDN: the reference loads nothing from another host.
        withDefaultFonts: false,
      },
      logLevel: "warn",
    });
  });
}
