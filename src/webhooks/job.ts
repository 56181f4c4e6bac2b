import { SecretBox } from "../lib/secret-box.js";
import type { Runtime } from "../runtime.js";
import type { Job } from "../worker/runner.js";
import { WebhookDelivery } from "./delivery.js";

/** How often an idle worker looks for due webhook events. */
export const WEBHOOK_POLL_MS = 100;

export function createDelivery(runtime: Runtime, workerId: string): WebhookDelivery {
  const { config } = runtime;
  return new WebhookDelivery({
    db: runtime.database.db,
    box: new SecretBox(runtime.secrets.SECRET_ENCRYPTION_KEY),
    logger: runtime.logger,
    retryScheduleMs: config.webhooks.retryScheduleSeconds.map((s) => Math.round(s * 1000)),
    timeoutMs: config.webhooks.timeoutMs,
    ssrfAllowCidrs: config.webhooks.ssrfAllowCidrs,
    workerId,
  });
}

/**
 * The delivery job of every worker process (and of `serve`): drains due events with bounded
 * concurrency; when idle, polls every WEBHOOK_POLL_MS. Safe with any number of workers.
 */
export function webhookDeliveryJob(runtime: Runtime, instanceId: string): Job {
  const delivery = createDelivery(runtime, instanceId);
  return {
    name: "webhook-delivery",
    everyMs: WEBHOOK_POLL_MS,
    async run(signal) {
      await delivery.drain(signal);
    },
  };
}
