import { hostname } from "node:os";
import type { Db } from "../db/database.js";
import type { Job } from "./runner.js";

export const HEARTBEAT_EVERY_MS = 10_000;
export const HEARTBEAT_STALE_MS = 60_000;

/** Records that this worker instance is alive; `/readyz` counts the live ones. */
export function heartbeatJob(db: Db, instanceId: string, role: string): Job {
  const startedAt = new Date();
  return {
    name: "heartbeat",
    everyMs: HEARTBEAT_EVERY_MS,
    async run() {
      const now = new Date();
      await db
        .insertInto("worker_heartbeats")
        .values({
          instance_id: instanceId,
          role,
          hostname: hostname(),
          pid: process.pid,
          started_at: startedAt,
          seen_at: now,
        })
        .onConflict((oc) => oc.column("instance_id").doUpdateSet({ seen_at: now }))
        .execute();
      await db
        .deleteFrom("worker_heartbeats")
        .where("seen_at", "<", new Date(now.getTime() - 24 * 3600_000))
        .execute();
    },
  };
}

export async function removeHeartbeat(db: Db, instanceId: string): Promise<void> {
  await db.deleteFrom("worker_heartbeats").where("instance_id", "=", instanceId).execute();
}

export async function liveWorkers(db: Db, now: Date): Promise<number> {
  const row = await db
    .selectFrom("worker_heartbeats")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("seen_at", ">", new Date(now.getTime() - HEARTBEAT_STALE_MS))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
