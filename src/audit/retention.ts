import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import type { Job } from "../worker/runner.js";

/** Rows one purge statement removes at most (a long backlog goes in several short transactions). */
const PURGE_BATCH = 10_000;
const HOUR = 3_600_000;

/**
 * Deletes audit records older than `before`, in batches. The table refuses deletes (migration
 * 0017) except in a transaction that declares itself the retention purge; this is the only one.
 */
export async function purgeAuditLog(db: Db, before: Date): Promise<number> {
  let purged = 0;
  for (;;) {
    const n = await db.transaction().execute(async (trx) => {
      await sql`set local stablegate.audit_retention = 'on'`.execute(trx);
      const r = await sql`delete from audit_log where id in (
          select id from audit_log where created_at < ${before} order by id limit ${PURGE_BATCH})`.execute(
        trx,
      );
      return Number(r.numAffectedRows ?? 0n);
    });
    purged += n;
    if (n < PURGE_BATCH) return purged;
  }
}

/** The hourly purge of records older than `retentionDays` (none when the retention is 0: keep all). */
export function auditRetentionJob(deps: {
  db: Db;
  clock: { now(): number };
  logger: Logger;
  retentionDays: number;
}): Job[] {
  if (deps.retentionDays <= 0) return [];
  return [
    {
      name: "audit-retention",
      everyMs: HOUR,
      async run() {
        const before = new Date(deps.clock.now() - deps.retentionDays * 24 * HOUR);
        const purged = await purgeAuditLog(deps.db, before);
        if (purged > 0) deps.logger.info({ purged, before }, "audit log: records past retention purged");
      },
    },
  ];
}
