import type { Db } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import type { Job } from "../worker/runner.js";
import { purgeIdempotencyKeys } from "./keys.js";
import { IDEMPOTENCY_RETENTION_MS } from "./run.js";

const HOUR = 3_600_000;

/**
 * The hourly purge of `Idempotency-Key` records past their 24 h retention. Each row holds a full
 * response body: without the purge the table only grows. Every worker runs it; concurrent purges
 * delete disjoint or already-deleted rows, which is harmless.
 */
export function idempotencyPurgeJob(deps: { db: Db; clock: { now(): number }; logger: Logger }): Job {
  return {
    name: "idempotency-purge",
    everyMs: HOUR,
    async run() {
      const before = new Date(deps.clock.now() - IDEMPOTENCY_RETENTION_MS);
      const purged = await purgeIdempotencyKeys(deps.db, before);
      if (purged > 0)
        deps.logger.info({ purged, before }, "idempotency keys past their 24 h retention purged");
    },
  };
}
