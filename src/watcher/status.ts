import type { ChainRegistry } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { Clock } from "../lib/clock.js";
import type { ReadinessCheck } from "../observability/readiness.js";

/** A chain whose watcher has not recorded the head for this long is reported as degraded. */
export const STALE_HEAD_MS = 120_000;

/**
 * One `/readyz` line per (network, environment): head, safe block, cursor and lag as recorded by
 * the watcher in `chain_cursors` (the database is shared, so api instances report what the workers
 * see without calling the chain themselves). Unconfigured chains report "down" with the variable
 * to set; never critical (the API answers 503 CHAIN_UNAVAILABLE for them, everything else works).
 */
export function chainReadinessChecks(chains: ChainRegistry, db: Db, clock: Clock): ReadinessCheck[] {
  return chains.all().map((entry) => ({
    name: `chain:${entry.network}:${entry.environment}`,
    critical: false,
    async check() {
      if (entry.status === "unavailable") return { status: "down" as const, detail: entry.reason };
      const row = await db
        .selectFrom("chain_cursors")
        .selectAll()
        .where("network", "=", entry.network)
        .where("environment", "=", entry.environment)
        .executeTakeFirst();
      const where = entry.kind === "simulator" ? "simulator" : `${entry.kind} ${entry.endpoint}`;
      const source = `${where}, ${entry.confirmations} confirmation${entry.confirmations === 1 ? "" : "s"}`;
      if (!row || row.head_block === null || row.head_seen_at === null) {
        return { status: "degraded" as const, detail: `${source}; not scanned yet` };
      }
      const head = Number(row.head_block);
      const cursor = Number(row.cursor_block);
      const safe = row.safe_block === null ? head : Number(row.safe_block);
      const lag = Math.max(0, safe - cursor);
      const ageMs = clock.now() - row.head_seen_at.getTime();
      let detail = `head ${head}, cursor ${cursor}, lag ${lag} blocks (${source})`;
      let status: "ok" | "degraded" = "ok";
      if (row.last_error && row.last_error_at && row.last_error_at >= row.head_seen_at) {
        status = "degraded";
        detail += `; last error: ${row.last_error}`;
      }
      if (ageMs > STALE_HEAD_MS) {
        status = "degraded";
        detail += `; head last seen ${Math.round(ageMs / 1000)} s ago`;
      }
      return { status, detail };
    },
  }));
}
