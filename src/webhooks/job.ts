import { SecretBox } from "../lib/secret-box.js";
import type { Runtime } from "../runtime.js";
import type { Job } from "../worker/runner.js";
import { WebhookDelivery } from "./delivery.js";
import { WEBHOOK_CHANNEL } from "./outbox.js";

/**
 * The longest an idle worker sleeps: it wakes earlier for the next queued retry and at once for a
 * new event's notification. The poll covers a lost notification (LISTEN unavailable, connection
 * being re-opened) and leases of dead workers running out.
 */
export const WEBHOOK_POLL_MS = 1_000;

export function createDelivery(runtime: Runtime, workerId: string): WebhookDelivery {
  const { config } = runtime;
  return new WebhookDelivery({
    db: runtime.database.db,
    box: new SecretBox(runtime.secrets.SECRET_ENCRYPTION_KEY),
    logger: runtime.logger,
    retryScheduleMs: config.webhooks.retryScheduleSeconds.map((s) => Math.round(s * 1000)),
    timeoutMs: config.webhooks.timeoutMs,
    ssrfAllowCidrs: config.webhooks.ssrfAllowCidrs,
    allowedPorts: config.webhooks.allowedPorts,
    workerId,
  });
}

/**
 * The delivery job of every worker process (and of `serve`): one long run that drains due events
 * with bounded concurrency and, when idle, sleeps until the outbox's NOTIFY (sent when the
 * enqueuing transaction commits), the next retry's due time or `pollMs`, whichever comes first. Safe with any number of
 * workers: every notified worker tries to claim; SKIP LOCKED gives each event to one.
 */
export function webhookDeliveryJob(
  runtime: Runtime,
  instanceId: string,
  options: { pollMs?: number } = {},
): Job {
  const delivery = createDelivery(runtime, instanceId);
  const pollMs = options.pollMs ?? WEBHOOK_POLL_MS;
  return {
    name: "webhook-delivery",
    everyMs: pollMs,
    async run(signal) {
      let unlisten: (() => Promise<void>) | undefined;
      try {
        unlisten = await runtime.database.listen?.(WEBHOOK_CHANNEL, () => delivery.notify());
      } catch (err) {
        runtime.logger.warn({ err }, "webhook LISTEN unavailable; new events are found by polling");
      }
      try {
        await delivery.run(signal, pollMs);
      } finally {
        await unlisten?.().catch(() => {});
        if (signal.aborted) await delivery.close();
      }
    },
  };
}
