import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { safeEqual } from "../../lib/crypto.js";
import type { App, RouteDeps } from "../app-types.js";

/**
 * `/docs/openapi.json` (OpenAPI 3.1 generated from the route schemas) behind HTTP basic auth
 * (CONTRACT §9). Without DOCS_USER/DOCS_PASSWORD it answers 404.
 */
export function docsRoutes(app: App, { config }: RouteDeps) {
  const { user, password } = config.docs;
  app.get(
    "/docs/openapi.json",
    {
      config: { tier: "dashboard" },
      schema: { hide: true, response: { 200: Type.Object({}, { additionalProperties: true }) } },
      onRequest: async (request, reply) => {
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
      },
    },
    async () => app.swagger() as unknown as Record<string, unknown>,
  );
}
