import type { FastifyInstance } from "fastify";
import type { Metrics } from "../../observability/metrics.js";

/** Request count and latency per route template (not raw URL, to bound cardinality) and status. */
export function registerMetrics(app: FastifyInstance, metrics: Metrics) {
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    const labels = { method: request.method, route, status_code: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
}
