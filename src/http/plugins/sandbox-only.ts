import type { FastifyInstance } from "fastify";
import { AppError } from "../../domain/errors.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Exists only in the sandbox (docs/merchants/sandbox.md#simulated-payments): 404 in production, before credentials are looked at. */
    sandboxOnly?: boolean;
  }
}

/**
 * Sandbox-only routes answer 404 in production like an unknown route, before authentication (so a
 * production caller learns nothing from 401/403). The environment is the dashboard's
 * `X-Environment` when sent, else the base URL's; the handler checks the authenticated
 * environment again.
 */
export function registerSandboxOnly(app: FastifyInstance) {
  app.addHook("onRequest", async (request) => {
    if (request.routeOptions.config?.sandboxOnly !== true) return;
    const header = request.headers["x-environment"];
    const environment = header === "sandbox" || header === "production" ? header : request.environment;
    if (environment !== "sandbox")
      throw AppError.notFound(`No route ${request.method} ${request.url.split("?")[0]}.`);
  });
}
