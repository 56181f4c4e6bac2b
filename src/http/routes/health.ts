import { Type } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import { AppError } from "../../domain/errors.js";
import { safeEqual } from "../../lib/crypto.js";
import type { CheckStatus } from "../../observability/readiness.js";
import type { App, RouteDeps } from "../app-types.js";
import { commonErrors } from "../schemas/common.js";

const Check = Type.Object({
  status: Type.Union([Type.Literal("ok"), Type.Literal("degraded"), Type.Literal("down")]),
  detail: Type.Optional(Type.String()),
});

const Readiness = Type.Object({
  status: Type.Union([Type.Literal("ok"), Type.Literal("degraded"), Type.Literal("unavailable")]),
  checks: Type.Optional(
    Type.Record(Type.String(), Check, {
      description: "Only with Authorization: Bearer <METRICS_TOKEN>: lags, queue depths, wallet balances",
    }),
  ),
});

/**
 * The operator's token (docs/api-reference.md#operations): `Authorization: Bearer <METRICS_TOKEN>`, compared in constant
 * time. Without a configured token (possible only outside production mode: start-up refuses it
 * there) nobody holds it — the peer's address is never a credential: behind a same-host proxy
 * every request comes from loopback.
 */
function holdsMetricsToken(request: FastifyRequest, token: string | undefined): boolean {
  if (token === undefined) return false;
  const authorization = request.headers.authorization;
  return typeof authorization === "string" && safeEqual(authorization, `Bearer ${token}`);
}

/** Operational endpoints (docs/api-reference.md#operations); exempt from rate limits so probes never starve. */
export function healthRoutes(app: App, { readiness, metrics, config }: RouteDeps) {
  app.get(
    "/healthz",
    {
      config: { tier: false },
      schema: {
        tags: ["Operations"],
        summary: "Liveness",
        description: "Answers while the process runs; checks nothing else (that is /readyz).",
        response: {
          200: Type.Object({ status: Type.Literal("ok") }, { description: "The process is alive" }),
        },
      },
    },
    async () => ({ status: "ok" as const }),
  );

  app.get(
    "/readyz",
    {
      config: { tier: false },
      schema: {
        tags: ["Operations"],
        summary: "Readiness: database, rate-limit store, workers, chains",
        description: "The overall status for anyone (200 ready, 503 not); the checks with the metrics token.",
        response: {
          200: { ...Readiness, description: "Ready (`degraded`: a non-critical check is down)" },
          503: { ...Readiness, description: "Not ready: a critical check is down; take it out of rotation" },
        },
      },
    },
    async (request, reply) => {
      const results = await Promise.all(
        readiness.map(async (c) => {
          try {
            return [c, await c.check()] as const;
          } catch (err) {
            return [
              c,
              { status: "down" as CheckStatus, detail: err instanceof Error ? err.message : String(err) },
            ] as const;
          }
        }),
      );
      const checks = Object.fromEntries(results.map(([c, r]) => [c.name, r]));
      const criticalDown = results.some(([c, r]) => c.critical && r.status === "down");
      const anyNotOk = results.some(([, r]) => r.status !== "ok");
      const status: "ok" | "degraded" | "unavailable" = criticalDown
        ? "unavailable"
        : anyNotOk
          ? "degraded"
          : "ok";
      // The detail (lags, queue depths, hot-wallet balances) is for the operator only.
      const body = holdsMetricsToken(request, config.metricsToken) ? { status, checks } : { status };
      return reply.code(criticalDown ? 503 : 200).send(body);
    },
  );

  // Prometheus metrics: only with the bearer token (without METRICS_TOKEN configured, to nobody).
  // Others get 404, as for a route that does not exist.
  app.get(
    "/metrics",
    {
      config: { tier: false },
      schema: { hide: true, response: { 200: Type.String(), 404: commonErrors[404] } },
    },
    async (request, reply) => {
      if (!holdsMetricsToken(request, config.metricsToken)) throw AppError.notFound();
      return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    },
  );
}
