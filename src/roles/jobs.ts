import { auditRetentionJob, securityNotificationJob } from "../audit/index.js";
import { sessionExpiryJob } from "../deposits/index.js";
import { energyEngineOf, energyJobs } from "../energy/index.js";
import { idempotencyPurgeJob } from "../idempotency/index.js";
import { reserveJobs } from "../reserves/index.js";
import type { Runtime } from "../runtime.js";
import { senderJobs } from "../sender/index.js";
import { sweepJobs } from "../sweep/index.js";
import { watcherJobs } from "../watcher/index.js";
import { webhookDeliveryJob } from "../webhooks/index.js";
import { heartbeatJob } from "../worker/heartbeat.js";
import type { Job } from "../worker/runner.js";

/** How often a worker closes checkout sessions whose timer ran out. */
const CHECKOUT_EXPIRY_POLL_MS = 1_000;

/** Every background job of a worker process (and of `serve`). Add new jobs here. */
export function workerJobs(runtime: Runtime, instanceId: string, role: string): Job[] {
  return [
    heartbeatJob(runtime.database.db, instanceId, role),
    securityNotificationJob({
      db: runtime.database.db,
      clock: runtime.clock,
      logger: runtime.logger,
      mailer: { send: (m) => runtime.authKit.mailer.send(m) },
    }),
    ...auditRetentionJob({
      db: runtime.database.db,
      clock: runtime.clock,
      logger: runtime.logger,
      retentionDays: runtime.config.audit.retentionDays,
    }),
    idempotencyPurgeJob({ db: runtime.database.db, clock: runtime.clock, logger: runtime.logger }),
    ...watcherJobs(
      {
        db: runtime.database.db,
        chains: runtime.chains,
        depositHandoff: runtime.depositHandoff,
        addressDeriver: runtime.addressDeriver,
        logger: runtime.logger,
        clock: runtime.clock,
        listen: runtime.database.listen?.bind(runtime.database),
      },
      instanceId,
    ),
    webhookDeliveryJob(
      {
        config: { webhooks: runtime.config.webhooks },
        secrets: { SECRET_ENCRYPTION_KEY: runtime.secrets.SECRET_ENCRYPTION_KEY },
        logger: runtime.logger,
        database: runtime.database,
        webhookTransport: runtime.webhookTransport,
      },
      instanceId,
    ),
    // TRON's energy engine (issue #38) gates the sender's signing: composed here (energy/ sits above sender/).
    ...senderJobs(
      { ...runtime, energyGate: (chain, writer) => energyEngineOf(runtime, chain, writer) },
      instanceId,
    ),
    ...sweepJobs(runtime, instanceId),
    ...energyJobs(runtime, instanceId),
    ...reserveJobs(runtime),
    sessionExpiryJob({
      db: runtime.database.db,
      clock: runtime.clock,
      logger: runtime.logger,
      fees: runtime.config.fees,
      everyMs: CHECKOUT_EXPIRY_POLL_MS,
      // The simulator mines on demand with the clock's time: its chain time is the clock.
      clockTimedChains: runtime.chains
        .available()
        .filter((c) => c.kind === "simulator")
        .map((c) => ({ network: c.network, environment: c.environment })),
    }),
  ];
}
