import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import {
  eventWithAttempts,
  listEvents,
  maskedEndpointSecret,
  rotateEndpointSecret,
  setEndpointUrl,
  type WebhookAttemptRow,
  type WebhookEventRow,
} from "../../webhooks/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { auditTrail } from "../plugins/audit.js";
import { principal } from "../plugins/auth.js";
import { StepUpBody, StepUpFields } from "../plugins/step-up.js";
import { commonErrors, documentedAs, ErrorEnvelope, list, Nullable, ok } from "../schemas/common.js";
import { WebhookDelivery as DeliveryBody, type WebhookDeliveryBody } from "../schemas/webhook-delivery.js";

/**
 * Webhook management (docs/merchants/authentication.md#webhook-management-from-the-dashboard), on both channels (`auth: "merchant"`); per merchant × the
 * request's environment. On the API-key channel `x-api-secret` is required for URL set, secret read
 * and rotate (docs/merchants/authentication.md#where-the-secret-is-required).
 */

const DeliveryStatus = Type.Union([
  Type.Literal("pending"),
  Type.Literal("delivered"),
  Type.Literal("failed"),
]);
const Timestamp = Type.String({ format: "date-time" });

const WebhookEvent = Type.Object(
  {
    webhookEventId: Type.String(),
    transactionId: Type.String(),
    type: Type.Union([
      Type.Literal("deposit"),
      Type.Literal("withdrawal"),
      Type.Literal("payout"),
      Type.Literal("test"),
    ]),
    transactionStatus: Type.String(),
    deliveryStatus: DeliveryStatus,
    url: Nullable(Type.String()),
    attempts: Type.Integer({ description: "Attempts made (automatic and manual)" }),
    nextAttemptAt: Nullable(Timestamp),
    lastAttemptAt: Nullable(Timestamp),
    lastResponseStatus: Nullable(Type.Integer()),
    lastError: Nullable(Type.String()),
    isTest: Type.Boolean(),
    createdAt: Timestamp,
    deliveredAt: Nullable(Timestamp),
    // Served as stored (a body written before a field was added must still list, and unknown
    // fields must not be dropped by the serialiser); documented as the delivery body per type.
    payload: documentedAs(
      Type.Object(
        {
          success: Type.Boolean(),
          message: Type.String(),
          data: Type.Object({}, { additionalProperties: true }),
        },
        { description: "The body sent, exactly as signed (one of the `webhooks` bodies)" },
      ),
      DeliveryBody,
    ),
  },
  { title: "WebhookEvent" },
);

const Attempt = Type.Object(
  {
    attemptNumber: Type.Integer(),
    manual: Type.Boolean(),
    startedAt: Timestamp,
    url: Nullable(Type.String()),
    responseStatus: Nullable(Type.Integer()),
    latencyMs: Type.Integer(),
    error: Nullable(Type.String()),
    responseBody: Nullable(Type.String({ description: "First 1 KB of the answer" })),
  },
  { title: "WebhookDeliveryAttempt" },
);

const EventIdParams = Type.Object({ webhookEventId: Type.String({ minLength: 1, maxLength: 100 }) });
const Conflict = { 409: ErrorEnvelope };

function iso(d: Date | null): string | null {
  return d ? d.toISOString() : null;
}

export function formatWebhookEvent(e: WebhookEventRow) {
  return {
    webhookEventId: e.id,
    transactionId: e.transaction_id,
    type: e.type,
    transactionStatus: e.transaction_status,
    deliveryStatus: e.delivery_status,
    url: e.url,
    attempts: e.attempts,
    nextAttemptAt: iso(e.next_attempt_at),
    lastAttemptAt: iso(e.last_attempt_at),
    lastResponseStatus: e.last_response_status,
    lastError: e.last_error,
    isTest: e.is_test,
    createdAt: e.created_at.toISOString(),
    deliveredAt: iso(e.delivered_at),
    payload: JSON.parse(e.body) as WebhookDeliveryBody,
  };
}

function formatAttempt(a: WebhookAttemptRow) {
  return {
    attemptNumber: a.attempt_number,
    manual: a.manual,
    startedAt: a.started_at.toISOString(),
    url: a.url,
    responseStatus: a.response_status,
    latencyMs: a.latency_ms,
    error: a.error,
    responseBody: a.response_body,
  };
}

export function webhookRoutes(app: App, deps: RouteDeps) {
  const db = deps.database.db;
  const endpoints = deps.useCases.webhookEndpoints;
  const manual = deps.manualWebhooks;
  const tags = ["Webhooks"];

  app.post(
    "/api/v1/webhook/url",
    {
      config: {
        auth: "merchant",
        permission: "webhooks:write",
        tier: "standard",
        requireSecret: true,
        stepUp: {},
        audit: { action: "webhook.url_update", fields: { from: "body", names: ["webhookUrl"] } },
      },
      schema: {
        summary: "Set the webhook URL of this environment",
        description:
          "Absolute https URL (plain http accepted in sandbox only) whose host is and resolves to a public address. Through the dashboard, production needs the step-up codes `otp` (and `totp` when 2FA is on).",
        tags,
        body: Type.Object(
          { webhookUrl: Type.String({ maxLength: 2048 }), ...StepUpFields },
          { additionalProperties: false },
        ),
        response: {
          200: ok(Type.Object({ webhookUrl: Type.String() }), {
            description: "The webhook URL now in use for this environment.",
          }),
          ...commonErrors,
        },
      },
    },
    async (request) => {
      const p = principal(request);
      const { webhookUrl } = request.body;
      await setEndpointUrl(endpoints, p.merchantId, p.environment, webhookUrl, auditTrail(request));
      return { success: true as const, data: { webhookUrl } };
    },
  );

  app.post(
    "/api/v1/webhook/test",
    {
      config: { auth: "merchant", tier: "standard", permission: "webhooks:write", errors: ["INVALID_STATE"] },
      schema: {
        summary: "Send a test webhook to the configured URL now",
        description:
          "One signed delivery with `X-Webhook-Test: true` and `data.type` = `test`; recorded as an event.",
        tags,
        response: {
          200: ok(
            Type.Object({
              webhookEventId: Type.String(),
              deliveryStatus: DeliveryStatus,
              responseStatus: Nullable(Type.Integer()),
            }),
            { description: "The test event and how its delivery went (it is also in the event log)." },
          ),
          ...commonErrors,
          ...Conflict,
        },
      },
    },
    async (request) => {
      const p = principal(request);
      const event = await manual.testEndpoint(p.merchantId, p.environment);
      return {
        success: true as const,
        data: {
          webhookEventId: event.id,
          deliveryStatus: event.delivery_status,
          responseStatus: event.last_response_status,
        },
      };
    },
  );

  app.get(
    "/api/v1/webhook/secret",
    {
      config: { auth: "merchant", tier: "standard", permission: "webhooks:write", requireSecret: true },
      schema: {
        summary: "The webhook secret of this environment, masked",
        tags,
        response: {
          200: ok(
            Type.Object({ webhookSecret: Type.String({ description: "All * but the last 8 characters" }) }),
            { description: "The secret, masked: enough to tell which one is in use." },
          ),
          ...commonErrors,
        },
      },
    },
    async (request) => {
      const p = principal(request);
      const webhookSecret = await maskedEndpointSecret(endpoints, p.merchantId, p.environment);
      return { success: true as const, data: { webhookSecret } };
    },
  );

  app.post(
    "/api/v1/webhook/secret/rotate",
    {
      config: {
        auth: "merchant",
        permission: "webhooks:write",
        tier: "standard",
        requireSecret: true,
        stepUp: {},
        audit: { action: "webhook.secret_rotate" },
      },
      schema: {
        summary: "Rotate the webhook secret; the new one is returned in full, this once",
        description:
          "The previous secret keeps signing the Standard Webhooks `webhook-signature` header for 24 hours. Through the dashboard, production needs the step-up codes `otp` (and `totp` when 2FA is on).",
        tags,
        body: StepUpBody,
        response: {
          200: ok(Type.Object({ webhookSecret: Type.String({ description: "The new `whsec_…` secret" }) }), {
            description: "The new secret in full, this once: store it now.",
          }),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const p = principal(request);
      const secret = await rotateEndpointSecret(endpoints, p.merchantId, p.environment, auditTrail(request));
      reply.header("cache-control", "no-store");
      return { success: true as const, data: { webhookSecret: secret } };
    },
  );

  app.post(
    "/api/v1/webhook/retry/:webhookEventId",
    {
      config: { auth: "merchant", tier: "standard", permission: "webhooks:write", errors: ["INVALID_STATE"] },
      schema: {
        summary: "Deliver an event again now (one attempt, whatever its status)",
        tags,
        params: EventIdParams,
        response: { 200: ok(WebhookEvent), ...commonErrors, ...Conflict },
      },
    },
    async (request) => {
      const p = principal(request);
      const event = await manual.retryNow(p.merchantId, p.environment, request.params.webhookEventId);
      return { success: true as const, data: formatWebhookEvent(event) };
    },
  );

  app.get(
    "/api/v1/webhook/events",
    {
      config: { auth: "merchant", tier: "standard", permission: "webhooks:read" },
      schema: {
        summary: "The event log of this environment",
        description:
          "Newest first by default. `status` and `deliveryStatus` are the same filter (either name works).",
        tags,
        querystring: Type.Composite([
          ListQuerySchema,
          Type.Object({
            status: Type.Optional(DeliveryStatus),
            deliveryStatus: Type.Optional(DeliveryStatus),
            transactionId: Type.Optional(Type.String({ maxLength: 100 })),
          }),
        ]),
        response: { 200: list(WebhookEvent), ...commonErrors },
      },
    },
    async (request) => {
      const p = principal(request);
      const q = request.query;
      if (q.status && q.deliveryStatus && q.status !== q.deliveryStatus) {
        throw AppError.validation([
          {
            field: "deliveryStatus",
            message: "must equal status when both are given (they are the same filter)",
          },
        ]);
      }
      const status = q.deliveryStatus ?? q.status;
      const params = listParams(q);
      const { rows, total } = await listEvents(
        db,
        p.merchantId,
        p.environment,
        { status, transactionId: q.transactionId },
        params,
      );
      return {
        success: true as const,
        data: rows.map(formatWebhookEvent),
        pagination: pagination(params, total),
      };
    },
  );

  app.get(
    "/api/v1/webhook/events/:webhookEventId",
    {
      config: { auth: "merchant", tier: "standard", permission: "webhooks:read" },
      schema: {
        summary: "One event with every delivery attempt",
        tags,
        params: EventIdParams,
        response: {
          200: ok(
            Type.Composite([WebhookEvent, Type.Object({ deliveryAttempts: Type.Array(Attempt) })], {
              title: "WebhookEventWithAttempts",
            }),
          ),
          ...commonErrors,
        },
      },
    },
    async (request) => {
      const p = principal(request);
      const { event, attempts } = await eventWithAttempts(
        db,
        p.merchantId,
        p.environment,
        request.params.webhookEventId,
      );
      return {
        success: true as const,
        data: { ...formatWebhookEvent(event), deliveryAttempts: attempts.map(formatAttempt) },
      };
    },
  );
}
