/**
 * The webhooks feature's public API: other folders import it from here only.
 *
 * - outbox: `enqueueWebhookEvent` (in the caller's transaction) and the NOTIFY channel;
 * - payload: the `data` of a delivery body;
 * - endpoints/secrets: the endpoint rows of a new merchant;
 * - ssrf: URL validation (webhook URLs, checkout `callbackUrl`);
 * - the delivery job, the manual sender (retry, test send) and its transport (built once per process);
 * - the event stream (`GET /api/v1/webhook/stream`), status (metrics, readiness).
 */

export { webhookDeliveryJob } from "./job.js";
export { type EnqueueWebhookInput, enqueueWebhookEvent, WEBHOOK_CHANNEL } from "./outbox.js";
export { webhookData } from "./payload.js";
export { createWebhookEndpoints } from "./secrets.js";
export { validateWebhookUrl } from "./ssrf.js";
export { registerWebhookMetrics, webhookReadinessCheck } from "./status.js";
export { type StreamedDelivery, startCursor, WebhookStreamHub } from "./stream.js";
