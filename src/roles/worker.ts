import { randomBytes } from "node:crypto";
import type { Runtime } from "../runtime.js";
import { heartbeatJob, removeHeartbeat } from "../worker/heartbeat.js";
import { JobRunner } from "../worker/runner.js";

/** The background jobs of a worker process (or of `serve`). Later issues add theirs here. */
export function startWorker(runtime: Runtime, role: string): { stop(): Promise<void> } {
  const instanceId = `${role}-${randomBytes(6).toString("hex")}`;
  const db = runtime.database.db;
  const runner = new JobRunner([heartbeatJob(db, instanceId, role)], runtime.logger);
  runner.start();
  return {
    async stop() {
      await runner.stop();
      await removeHeartbeat(db, instanceId).catch(() => {});
    },
  };
}
