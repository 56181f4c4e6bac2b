/**
 * The webhooks feature's public API: other folders import it from here only.
 *
 * - outbox: `enqueueWebhookEvent` (in the caller's transaction) and the NOTIFY channel;
 * - payload: the `data` of a delivery body;
 * - endpoints: the rows of a new merchant, the URL (validated), the secret masked and its rotation;
 * - ssrf: URL validation (webhook URLs, checkout `callbackUrl`);
 * - events: the event log;
 * - the delivery job, and the process's sending (one transport, the manual sender of the routes);
 * - the event stream (`GET /api/v1/webhook/stream`), status (metrics, readiness).
 */
export {
  type EndpointDeps,
  maskedEndpointSecret,
  rotateEndpointSecret,
  setEndpointUrl,
} from "./endpoints.js";
export {
  type EventFilter,
  eventWithAttempts,
  listEvents,
  type WebhookAttemptRow,
  type WebhookEventRow,
} from "./events.js";
export { type WebhookJobDeps, webhookDeliveryJob } from "./job.js";
export { createWebhookSending, ManualDelivery } from "./manual.js";
export { type EnqueueWebhookInput, enqueueWebhookEvent, WEBHOOK_CHANNEL } from "./outbox.js";
export { type WebhookSessionFields, webhookData } from "./payload.js";
export { createWebhookEndpoints } from "./secrets.js";
export { validateWebhookUrl } from "./ssrf.js";
export { registerWebhookMetrics, webhookReadinessCheck } from "./status.js";
export {
  ACCESS_CHANNEL,
  positionToken,
  type StreamEnd,
  type StreamedDelivery,
  startCursor,
  WebhookStreamHub,
} from "./stream.js";
export type { StreamLimits } from "./stream-slots.js";
export type { WebhookTransport } from "./transport.js";
