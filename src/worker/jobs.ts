import type { Runtime } from "../runtime.js";
import { watcherJobs } from "../watcher/jobs.js";
import { webhookDeliveryJob } from "../webhooks/job.js";
import { heartbeatJob } from "./heartbeat.js";
import type { Job } from "./runner.js";

/** Every background job of a worker process (and of `serve`). Add new jobs here. */
export function workerJobs(runtime: Runtime, instanceId: string, role: string): Job[] {
  return [
    heartbeatJob(runtime.database.db, instanceId, role),
    ...watcherJobs(
      {
        db: runtime.database.db,
        chains: runtime.chains,
        depositHandoff: runtime.depositHandoff,
        logger: runtime.logger,
        clock: runtime.clock,
      },
      instanceId,
    ),
    webhookDeliveryJob(runtime, instanceId),
  ];
}
