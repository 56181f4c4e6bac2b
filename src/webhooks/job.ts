import type { Config } from "../config/config.js";
import type { ResolvedSecrets } from "../config/secrets.js";
import type { Database } from "../db/database.js";
import { SecretBox } from "../lib/secret-box.js";
import type { Logger } from "../observability/logger.js";
import { runNotifiedLoop } from "../worker/notified-loop.js";
import type { Job } from "../worker/runner.js";
import { assembleDelivery, type WorkerDelivery } from "./delivery.js";
import { WEBHOOK_CHANNEL } from "./outbox.js";
import type { WebhookTransport } from "./transport.js";

/**
 * The longest an idle worker sleeps: it wakes earlier for the next queued retry and at once for a
 * new event's notification. The poll covers a lost notification (LISTEN unavailable, connection
 * being re-opened) and leases of dead workers running out.
 */
export const WEBHOOK_POLL_MS = 1_000;

/** What the delivery job uses. */
export interface WebhookJobDeps {
  config: { webhooks: Config["webhooks"] };
  secrets: Pick<ResolvedSecrets, "SECRET_ENCRYPTION_KEY">;
  logger: Logger;
  database: Pick<Database, "db" | "listen">;
  /** The process's one transport (shared with the manual sender); absent: the job's own, closed when it stops. */
  webhookTransport?: WebhookTransport | undefined;
}

function createDelivery(deps: WebhookJobDeps, workerId: string): WorkerDelivery {
  const { config } = deps;
  return assembleDelivery({
    db: deps.database.db,
    box: new SecretBox(deps.secrets.SECRET_ENCRYPTION_KEY),
    logger: deps.logger,
    retryScheduleMs: config.webhooks.retryScheduleSeconds.map((s) => Math.round(s * 1000)),
    timeoutMs: config.webhooks.timeoutMs,
    ssrfAllowCidrs: config.webhooks.ssrfAllowCidrs,
    allowedPorts: config.webhooks.allowedPorts,
    workerId,
    ...(deps.webhookTransport ? { transport: deps.webhookTransport } : {}),
  });
}

/**
 * The delivery job of every worker process (and of `serve`): one long run that drains due events
 * with bounded concurrency and, when idle, sleeps until the outbox's NOTIFY (sent when the
 * enqueuing transaction commits), the next retry's due time or `pollMs`, whichever comes first.
 * A NOTIFY during a drain makes it claim again. Safe with any number of workers: every notified
 * worker tries to claim; SKIP LOCKED gives each event to one.
 */
export function webhookDeliveryJob(
  deps: WebhookJobDeps,
  instanceId: string,
  options: { pollMs?: number } = {},
): Job {
  const delivery = createDelivery(deps, instanceId);
  const pollMs = options.pollMs ?? WEBHOOK_POLL_MS;
  const { database } = deps;
  return {
    name: "webhook-delivery",
    everyMs: pollMs,
    async run(signal) {
      try {
        await runNotifiedLoop(signal, {
          listen: database.listen?.bind(database),
          channel: WEBHOOK_CHANNEL,
          logger: deps.logger,
          what: "webhook deliveries",
          round: (s) => delivery.pipeline.round(s, pollMs),
          retryMs: pollMs,
          // A running drain claims again; an idle loop's sleep ends.
          onNotify: (wake) => {
            if (!delivery.pipeline.notify()) wake.notify();
          },
        });
      } finally {
        if (signal.aborted) await delivery.close();
      }
    },
  };
}
