import swagger from "@fastify/swagger";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { LogController } from "fastify";
import { newId } from "../domain/ids.js";
import type { App, RouteDeps } from "./app-types.js";
import { trustProxyOption } from "./client-ip.js";
import { LISTENER_ENV, type RawWithListener } from "./context.js";
import { environmentResolver } from "./environment.js";
import { frameworkErrorHandler, makeErrorHandler, notFoundHandler, rejectionOf } from "./errors.js";
import { registerLosslessJson } from "./json-body.js";
import { swaggerOptions } from "./openapi/document.js";
import { registerAudit } from "./plugins/audit.js";
import { registerAuth } from "./plugins/auth.js";
import { registerCors } from "./plugins/cors.js";
import { registerDashboardAuth, registerPermissions } from "./plugins/dashboard-auth.js";
import { registerMetrics } from "./plugins/metrics.js";
import { registerKeyRateLimit, registerRateLimit } from "./plugins/rate-limit.js";
import { registerSandboxOnly } from "./plugins/sandbox-only.js";
import { registerStepUp } from "./plugins/step-up.js";
import { routeModules } from "./routes/index.js";
import { validatorCompiler } from "./validation.js";

export interface BuildAppOptions {
  /** Extra routes (tests register probes for the auth and rate-limit plugins this way). */
  extraRoutes?: (app: App, deps: RouteDeps) => void;
}

const MAX_PARAM_LENGTH = 200;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the HTTP application (not listening): hooks, error handling, every route. */
export async function buildApp(deps: RouteDeps, options: BuildAppOptions = {}): Promise<App> {
  const { config } = deps;
  const app = Fastify({
    loggerInstance: deps.logger,
    trustProxy: trustProxyOption(config.http.trustProxy),
    bodyLimit: config.http.bodyLimitBytes,
    requestIdHeader: false,
    // A well-formed X-Request-Id from the caller is kept (for tracing across systems); otherwise ours.
    genReqId: (req) => {
      const incoming = req.headers["x-request-id"];
      return typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : newId("req");
    },
    return503OnClosing: true,
    // One log line per request, written when it is answered (the hook below), not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // The router's own refusals (a path that is not valid percent-encoding, a path parameter
    // over the limit) answer in the contract's envelope like every other bad input.
    frameworkErrors: frameworkErrorHandler(MAX_PARAM_LENGTH),
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  // Authorization is declared by each route (config.auth, audience, tier) and decided from the
  // matched route, never from the URL text; a route declaring it half is a programming error.
  app.addHook("onRoute", (route) => {
    const c = route.config;
    const where = `${String(route.method)} ${route.url}`;
    if (c?.auth !== undefined && c.tier === undefined)
      throw new Error(`${where}: an authenticated route declares its rate-limit tier`);
    if (c?.audience !== undefined && c.auth !== "dashboard" && c.auth !== "merchant")
      throw new Error(`${where}: config.audience needs a dashboard-channel config.auth`);
  });

  registerLosslessJson(app);
  app.setValidatorCompiler(validatorCompiler());
  app.setErrorHandler(makeErrorHandler(config.http.bodyLimitBytes));
  app.setNotFoundHandler(notFoundHandler);

  const resolveEnvironment = environmentResolver(config);
  app.decorateRequest("environment", "production");
  app.addHook("onRequest", async (request, reply) => {
    reply.header("X-Request-Id", request.id);
    reply.header("X-Content-Type-Options", "nosniff");
    request.environment = resolveEnvironment(request.host, (request.raw as RawWithListener)[LISTENER_ENV]);
  });
  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      {
        req: request,
        res: { statusCode: reply.statusCode },
        responseTime: Math.round(reply.elapsedTime),
        rejected: rejectionOf(request),
      },
      "request completed",
    );
  });
  registerRateLimit(app, config, deps.rateLimitStore, deps.clock);
  // Dashboard channel: CORS + Origin check of writes, cookies and the JWT verifier (before auth).
  await registerCors(app, config);
  await registerDashboardAuth(app, deps.authKit);
  registerSandboxOnly(app);
  registerAuth(app, config, deps.useCases.apiKeyLookups);
  registerKeyRateLimit(app, config, deps.rateLimitStore, deps.clock);
  // Every merchant route a dashboard session reaches declares its permission (onRoute check).
  registerPermissions(app);
  // Sensitive production writes need a fresh e-mailed code (+ TOTP); before the routes (onRoute check).
  registerStepUp(app, deps.authKit);
  registerMetrics(app, deps.metrics);
  // Who did what: the trail of the record each route's config.audit declares, which its use case
  // writes in the action's transaction (issues #21, #36).
  registerAudit(app, deps);

  // The OpenAPI document: from the route schemas, finished from each route's config (openapi/document.ts).
  await app.register(swagger, swaggerOptions(config));

  app.register(async (scoped) => {
    const routes = scoped as unknown as App;
    for (const register of routeModules) register(routes, deps);
    options.extraRoutes?.(routes, deps);
  });

  await app.ready();
  return app;
}
