import { randomBytes } from "node:crypto";
import type { Runtime } from "../runtime.js";
import { removeHeartbeat } from "../worker/heartbeat.js";
import { JobRunner } from "../worker/runner.js";
import { workerJobs } from "./jobs.js";

/** Runs the background jobs (`roles/jobs.ts`) of a worker process or of `serve`. */
export function startWorker(runtime: Runtime, role: string): { stop(): Promise<void> } {
  const instanceId = `${role}-${randomBytes(6).toString("hex")}`;
  const db = runtime.database.db;
  const runner = new JobRunner(workerJobs(runtime, instanceId, role), runtime.logger);
  runner.start();
  return {
    async stop() {
      await runner.stop();
      await removeHeartbeat(db, instanceId).catch(() => {});
    },
  };
}
