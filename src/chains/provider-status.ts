import { sql } from "kysely";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { ReadinessCheck } from "../observability/readiness.js";
import type { ProviderHealth } from "./provider-pool.js";

/**
 * The providers of each chain as the watching process sees them (issue #22), kept in
 * `chain_providers` so that `/readyz` on any instance names the bad one, and on `/metrics`.
 */

/** A provider row older than this is not reported (the process that watched the chain is gone). */
const STALE_MS = 10 * 60_000;

export async function recordProviderHealth(
  db: Db,
  network: CurrencyType,
  environment: Environment,
  health: readonly ProviderHealth[],
  now: Date,
): Promise<void> {
  if (health.length === 0) return;
  await db
    .insertInto("chain_providers")
    .values(
      health.map((h) => ({
        network,
        environment,
        provider: h.name,
        condition: h.condition,
        head_block: h.head,
        latency_ms: h.latencyMs,
        disagreements: h.disagreements,
        last_error: h.lastError,
        updated_at: now,
      })),
    )
    .onConflict((oc) =>
      oc.columns(["network", "environment", "provider"]).doUpdateSet({
        condition: sql`excluded.condition`,
        head_block: sql`excluded.head_block`,
        latency_ms: sql`excluded.latency_ms`,
        disagreements: sql`excluded.disagreements`,
        last_error: sql`excluded.last_error`,
        updated_at: sql`excluded.updated_at`,
      }),
    )
    .execute();
}

/** One `/readyz` line per chain with several providers: ok, or degraded naming each bad provider. */
export function providerReadinessChecks(
  chains: { available(): { network: CurrencyType; environment: Environment; providers: number }[] },
  db: Db,
  clock: Clock,
): ReadinessCheck[] {
  return chains
    .available()
    .filter((c) => c.providers > 1)
    .map((chain) => ({
      name: `chain-providers:${chain.network}:${chain.environment}`,
      critical: false,
      async check() {
        const rows = await db
          .selectFrom("chain_providers")
          .selectAll()
          .where("network", "=", chain.network)
          .where("environment", "=", chain.environment)
          .where("updated_at", ">", new Date(clock.now() - STALE_MS))
          .orderBy("provider")
          .execute();
        if (rows.length === 0)
          return { status: "degraded" as const, detail: `${chain.providers} providers; not probed yet` };
        const bad = rows.filter((r) => r.condition !== "ok");
        const ok = rows.length - bad.length;
        if (bad.length === 0) return { status: "ok" as const, detail: `${ok} providers healthy` };
        const named = bad.map((r) => {
          const why =
            r.condition === "lagging" && r.head_block !== null
              ? `lagging at head ${Number(r.head_block)}`
              : r.condition;
          const disagreements = r.disagreements > 0 ? `, ${r.disagreements} disagreement(s)` : "";
          return `${r.provider}: ${why}${disagreements}${r.last_error ? ` (${r.last_error})` : ""}`;
        });
        return {
          status: ok >= 2 ? ("degraded" as const) : ("down" as const),
          detail: `${ok} of ${rows.length} providers healthy; ${named.join("; ")}`,
        };
      },
    }));
}

export interface ProviderMetrics {
  disagreements: Counter<"network" | "environment" | "provider">;
  up: Gauge<"network" | "environment" | "provider">;
}

/**
 * `stablegate_chain_provider_disagreements_total` (counted by the process that saw them) and
 * `stablegate_chain_provider_up` (1 healthy, 0 down, lagging or suspect; read from `chain_providers`
 * at scrape time, so any instance reports the same).
 */
export function registerProviderMetrics(registry: Registry, db: Db, clock: Clock): ProviderMetrics {
  const labelNames = ["network", "environment", "provider"] as const;
  const up = new Gauge({
    name: "stablegate_chain_provider_up",
    help: "Chain provider healthy (1) or down, lagging or suspect (0), as the watching process last saw it",
    labelNames,
    registers: [registry],
    async collect() {
      const rows = await db
        .selectFrom("chain_providers")
        .select(["network", "environment", "provider", "condition"])
        .where("updated_at", ">", new Date(clock.now() - STALE_MS))
        .execute();
      this.reset();
      for (const r of rows)
        this.set(
          { network: r.network, environment: r.environment, provider: r.provider },
          r.condition === "ok" ? 1 : 0,
        );
    },
  });
  const disagreements = new Counter({
    name: "stablegate_chain_provider_disagreements_total",
    help: "Transfers a chain provider reported that no other healthy provider confirmed",
    labelNames,
    registers: [registry],
  });
  return { disagreements, up };
}
