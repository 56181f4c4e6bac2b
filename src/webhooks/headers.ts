/** The delivery's own headers (docs/merchants/webhooks.md#the-headers), beside the signature headers of `signing.ts`. */
export const WEBHOOK_USER_AGENT = "stablegate-webhooks/1.0";

/**
 * The unsigned headers of a delivery of one event: the same for a real POST (`delivery.ts`) and for
 * the bytes streamed to `stablegate-dev listen` (`stream.ts`), so the two cannot drift.
 */
export function deliveryHeaders(event: { transactionId: string; isTest: boolean }): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": WEBHOOK_USER_AGENT,
    "x-webhook-source": "stablegate",
    "x-transaction-id": event.transactionId,
  };
  if (event.isTest) headers["x-webhook-test"] = "true";
  return headers;
}
