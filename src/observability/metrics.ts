import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

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

export { Registry };

/** The signer's outflow cap (issue #34): refusals, and what each window counted against its limit. */
export interface SignerOutflowMetrics {
  capRefusals: Counter<"network" | "environment" | "window">;
}

/** One (currency type, environment, window) of the signer's outflow record, read at scrape time. */
export interface SignerOutflowRow {
  network: string;
  environment: string;
  window: "hour" | "day";
  /** Token base units signed in the window. */
  signed: bigint;
  /** The window's limit in base units; null when not capped. */
  limit: bigint | null;
}

export function registerSignerOutflowMetrics(
  registry: Registry,
  read: () => SignerOutflowRow[],
): SignerOutflowMetrics {
  const capRefusals = new Counter({
    name: "stablegate_signer_outflow_cap_refusals_total",
    help: "Withdrawals and payouts the signer refused because its outflow cap per hour or day was reached (alert on any increase)",
    labelNames: ["network", "environment", "window"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "stablegate_signer_outflow_units",
    help: "Token base units of withdrawals and payouts the signer signed in the sliding window",
    labelNames: ["network", "environment", "window"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of read())
        this.set({ network: r.network, environment: r.environment, window: r.window }, Number(r.signed));
    },
  });
  new Gauge({
    name: "stablegate_signer_outflow_limit_units",
    help: "The signer's outflow cap in token base units per window (SIGNER_MAX_OUTFLOW_PER_HOUR / _PER_DAY)",
    labelNames: ["network", "environment", "window"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of read())
        if (r.limit !== null)
          this.set({ network: r.network, environment: r.environment, window: r.window }, Number(r.limit));
    },
  });
  return { capRefusals };
}

/** The screening provider's decisions (issue #40, docs/screening.md). */
export interface ScreeningMetrics {
  decisions: Counter<"direction" | "decision" | "source">;
}

const SCREENING_DECISIONS = "stablegate_screening_decisions_total";

/** Registers the screening counter once per registry (a second client of the same registry shares it). */
export function registerScreeningMetrics(registry: Registry): ScreeningMetrics {
  const existing = registry.getSingleMetric(SCREENING_DECISIONS);
  const decisions =
    (existing as Counter<"direction" | "decision" | "source"> | undefined) ??
    new Counter({
      name: SCREENING_DECISIONS,
      help: "Screening decisions by direction, decision and source (provider, cache, policy: the provider failed, off: not configured)",
      labelNames: ["direction", "decision", "source"] as const,
      registers: [registry],
    });
  return { decisions };
}
