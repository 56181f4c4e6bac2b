import type { Runtime } from "../runtime.js";
import { heartbeatJob } from "./heartbeat.js";
import type { Job } from "./runner.js";

/** Every background job of a worker process (and of `serve`). Add new jobs here. */
export function workerJobs(runtime: Runtime, instanceId: string, role: string): Job[] {
  return [heartbeatJob(runtime.database.db, instanceId, role)];
}
