import type { TObject, TSchema } from "@sinclair/typebox";
import { WebhookDeliveries, WebhookDeliveryHeaders } from "../schemas/webhook-delivery.js";
import type { SchemaHoister } from "./hoist.js";

/** Headers of a delivery a receiver reads (Content-Type and User-Agent say nothing it needs). */
const HEADER_NAMES: Record<string, string> = {
  "x-webhook-signature": "X-Webhook-Signature",
  "webhook-id": "webhook-id",
  "webhook-timestamp": "webhook-timestamp",
  "webhook-signature": "webhook-signature",
  "x-webhook-source": "X-Webhook-Source",
  "x-transaction-id": "X-Transaction-Id",
  "x-webhook-test": "X-Webhook-Test",
};

const SUMMARIES: Record<keyof typeof WebhookDeliveries, string> = {
  deposit: "A deposit was confirmed or failed",
  withdrawal: "A withdrawal request is pending, completed, failed or rejected",
  payout: "A payout was completed or failed",
  test: "A test delivery (POST /api/v1/webhook/test)",
};

const DESCRIPTION =
  "POSTed to your webhook URL (a checkout session's `callbackUrl` for its deposit) when the " +
  "transaction's status changes. Verify it before trusting it: either `X-Webhook-Signature` " +
  "(`sha256=` + hex HMAC-SHA256 of the raw body bytes, keyed with your `whsec_…` secret as text) or " +
  "the Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature` (any " +
  "Standard Webhooks library; refuse a timestamp older than a few minutes). Deduplicate on " +
  "`webhook-id`: a delivery is retried until you answer 2xx. Answer fast and do the work afterwards.";

function headerParameters(test: boolean) {
  const headers = WebhookDeliveryHeaders as TObject;
  const required = new Set(headers.required ?? []);
  return Object.entries(headers.properties)
    .filter(([name]) => HEADER_NAMES[name] !== undefined && (test || name !== "x-webhook-test"))
    .map(([name, schema]) => {
      const { description, ...rest } = JSON.parse(JSON.stringify(schema as TSchema)) as Record<
        string,
        unknown
      >;
      return {
        name: HEADER_NAMES[name],
        in: "header",
        required: required.has(name) || (test && name === "x-webhook-test"),
        ...(typeof description === "string" ? { description } : {}),
        schema: rest,
      };
    });
}

/** The document's `webhooks` (OAS 3.1): one entry per delivery `type`, its body and its headers. */
export function webhooksSection(hoister: SchemaHoister) {
  return Object.fromEntries(
    Object.entries(WebhookDeliveries).map(([type, body]) => [
      type,
      {
        post: {
          operationId: `${type}Webhook`,
          summary: SUMMARIES[type as keyof typeof WebhookDeliveries],
          description: DESCRIPTION,
          tags: ["Webhooks"],
          security: [],
          parameters: headerParameters(type === "test"),
          requestBody: {
            required: true,
            content: { "application/json": { schema: hoister.hoist(JSON.parse(JSON.stringify(body))) } },
          },
          responses: {
            "2XX": { description: "Received: any 2xx answer within the timeout ends the retries" },
            default: {
              description: "Anything else, or no answer in time: the delivery is retried on the schedule",
            },
          },
        },
      },
    ]),
  );
}
