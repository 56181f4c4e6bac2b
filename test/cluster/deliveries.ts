import type { Received } from "../webhooks/support.js";
import { verifyLegacy, verifyStandard } from "../webhooks/support.js";

/** What the receiver learned from the deliveries: per transaction, the statuses signed for it. */
export interface DeliveryReport {
  deliveries: number;
  /** Both signatures (X-Webhook-Signature and the Standard Webhooks one) valid. */
  verified: number;
  invalid: string[];
  /** Attempts beyond the first of one webhook event (same webhook-id): allowed, counted. */
  redeliveries: number;
  /** Distinct events per (transaction, status): more than one is a duplicate status change. */
  duplicateEvents: string[];
  /** Per transaction id, the statuses of its verified deliveries, in order of arrival. */
  statuses: Map<string, string[]>;
}

/**
 * Checks every delivery the way a merchant's receiver does, with the secret of the merchant whose
 * URL (`/hook/<merchant index>`) it was sent to.
 */
export function readDeliveries(received: readonly Received[], secrets: readonly string[]): DeliveryReport {
  const report: DeliveryReport = {
    deliveries: received.length,
    verified: 0,
    invalid: [],
    redeliveries: 0,
    duplicateEvents: [],
    statuses: new Map(),
  };
  const seenIds = new Set<string>();
  const eventOf = new Map<string, string>();
  for (const r of received) {
    const index = Number(/^\/hook\/(\d+)$/.exec(r.path)?.[1] ?? Number.NaN);
    const secret = secrets[index];
    const id = String(r.headers["webhook-id"] ?? "");
    if (
      !secret ||
      !verifyLegacy(secret, r.raw, r.headers["x-webhook-signature"] as string | undefined) ||
      !verifyStandard(secret, r.raw, r.headers)
    ) {
      report.invalid.push(`${r.path} webhook-id ${id}`);
      continue;
    }
    report.verified++;
    if (seenIds.has(id)) {
      report.redeliveries++;
      continue;
    }
    seenIds.add(id);
    const body = JSON.parse(r.raw.toString("utf8")) as { data?: { transactionId?: string; status?: string } };
    const tx = body.data?.transactionId ?? "";
    const status = body.data?.status ?? "";
    const other = eventOf.get(`${tx}:${status}`);
    if (other) report.duplicateEvents.push(`${tx} ${status}: events ${other} and ${id}`);
    eventOf.set(`${tx}:${status}`, id);
    const list = report.statuses.get(tx) ?? [];
    list.push(status);
    report.statuses.set(tx, list);
  }
  return report;
}
