import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/** Prometheus metrics; one registry per app instance so several instances can share a process in tests. */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<"method" | "route" | "status_code">;
  httpDuration: Histogram<"method" | "route" | "status_code">;
}

export function createMetrics(withDefaults = true): Metrics {
  const registry = new Registry();
  if (withDefaults) collectDefaultMetrics({ register: registry, prefix: "stablegate_" });
  const httpRequests = new Counter({
    name: "stablegate_http_requests_total",
    help: "HTTP requests by route and status",
    labelNames: ["method", "route", "status_code"] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: "stablegate_http_request_duration_seconds",
    help: "HTTP request latency by route and status",
    labelNames: ["method", "route", "status_code"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return { registry, httpRequests, httpDuration };
}

/**
 * A gauge `collect` for several gauges filled by one `refresh` (database reads at scrape time):
 * prom-client calls each gauge's collect, and the calls of one scrape share a single refresh.
 */
export function sharedCollect(refresh: () => Promise<void>): () => Promise<void> {
  let refreshing: Promise<void> | null = null;
  return async () => {
    refreshing ??= refresh().finally(() => {
      refreshing = null;
    });
    await refreshing;
  };
}
