import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { safeEqual } from "../../lib/crypto.js";
import type { App, CheckStatus, RouteDeps } from "../app-types.js";
import { commonErrors } from "../schemas/common.js";

const Check = Type.Object({
  status: Type.Union([Type.Literal("ok"), Type.Literal("degraded"), Type.Literal("down")]),
  detail: Type.Optional(Type.String()),
});

const Readiness = Type.Object({
  status: Type.Union([Type.Literal("ok"), Type.Literal("degraded"), Type.Literal("unavailable")]),
  checks: Type.Record(Type.String(), Check),
});

const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);

/** Operational endpoints (CONTRACT §9); exempt from rate limits so probes never starve. */
export function healthRoutes(app: App, { readiness, metrics, config }: RouteDeps) {
  app.get(
    "/healthz",
    {
      config: { tier: false },
      schema: {
        tags: ["Operations"],
        summary: "Liveness",
        response: { 200: Type.Object({ status: Type.Literal("ok") }) },
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
        response: { 200: Readiness, 503: Readiness },
      },
    },
    async (_request, reply) => {
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
      const status = criticalDown ? "unavailable" : anyNotOk ? "degraded" : "ok";
      return reply.code(criticalDown ? 503 : 200).send({ status, checks });
    },
  );

  // Prometheus metrics: with METRICS_TOKEN set, a bearer token is required; without it, only
  // loopback clients (an operator port-forward or a sidecar) may read them. Others get 404.
  app.get(
    "/metrics",
    {
      config: { tier: false },
      schema: { hide: true, response: { 200: Type.String(), 404: commonErrors[404] } },
    },
    async (request, reply) => {
      const allowed = config.metricsToken
        ? safeEqual(request.headers.authorization ?? "", `Bearer ${config.metricsToken}`)
        : LOOPBACK.has(request.socket.remoteAddress ?? "");
      if (!allowed) throw AppError.notFound();
      return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    },
  );
}
