import { randomBytes } from "node:crypto";
import { presentSessionPrice, type SessionPrice } from "../domain/checkout.js";
import type { Environment } from "../domain/environment.js";
import { newId } from "../domain/ids.js";
import type { TransactionType } from "../domain/transaction.js";
import { presentTransaction, type TransactionRecord } from "../domain/transaction.js";

/**
 * Webhook bodies (docs/merchants/webhooks.md#the-body): `{ success: true, message, data }`, serialised once and stored (the
 * stored bytes are what every attempt sends and what the event log shows). `data` is the
 * transaction object of the API plus three fields a receiver would otherwise fetch with a second
 * request: `metadata` (a deposit's checkout-session metadata), `rejectionReason` (a withdrawal's)
 * and `environment` (`sandbox` | `production`, like Stripe's `livemode`). Extra fields only, so a
 * receiver written to the spec keeps working. The schema of these bytes, per type:
 * `http/schemas/webhook-delivery.ts` (test/webhooks/delivery-shape.test.ts holds them together).
 */

const NOUN: Record<TransactionType | "test", string> = {
  deposit: "Deposit",
  withdrawal: "Withdrawal",
  payout: "Payout",
  test: "Test webhook",
};

const PHRASE: Record<string, string> = {
  confirmed: "confirmed",
  completed: "completed",
  failed: "failed",
  rejected: "rejected by the merchant",
  pending: "pending approval",
  processing: "processing",
};

/** The short status text of docs/merchants/webhooks.md#the-body (`message`), e.g. "Deposit confirmed". */
export function webhookMessage(type: TransactionType, status: string): string {
  return `${NOUN[type]} ${PHRASE[status] ?? `status changed to ${status}`}`;
}

/** What a deposit's webhook shows of the checkout session it belongs to. */
export interface WebhookSessionFields {
  metadata: Record<string, unknown> | null;
  /** The session's price in fiat and locked rate (docs/decisions/prices.md); null: priced in the token. */
  price: SessionPrice | null;
}

/**
 * The `data` of a transaction's webhook: the API's transaction object, `metadata` (deposits: the
 * checkout session's, else null), `rejectionReason` (withdrawals; null otherwise), and on deposits
 * the session's price fields (`priceAmount`, `priceCurrency`, `exchangeRate`, `rateSource`,
 * `rateAt`: null without a price in fiat). `environment` is added by `serializeWebhookBody`.
 */
export function webhookData(t: TransactionRecord, session: WebhookSessionFields | null = null) {
  return {
    ...presentTransaction(t),
    metadata: t.type === "deposit" ? (session?.metadata ?? null) : null,
    rejectionReason: t.type === "withdrawal" ? t.rejectionReason : null,
    ...(t.type === "deposit" ? presentSessionPrice(session?.price ?? null) : {}),
  };
}

/**
 * Serialises the body. `data` is the transaction object, already JSON-shaped (amounts as exact
 * numbers); `id` is forced to equal `transactionId`, `environment` to the event's environment.
 */
export function serializeWebhookBody(
  message: string,
  data: Record<string, unknown>,
  transactionId: string,
  environment: Environment,
): string {
  return JSON.stringify({
    success: true,
    message,
    data: { ...data, id: transactionId, transactionId, environment },
  });
}

/**
 * The test delivery's body (its content is ours to choose: docs/merchants/webhooks.md#test-it): every field a real
 * delivery's `data` has, with `type` and `status` both `"test"` and zero amounts, so that a
 * receiver can parse it with the same code and no receiver mistakes it for money.
 */
export function testWebhookBody(merchantId: string, environment: Environment, now: Date) {
  const transactionId = newId("tx");
  const at = now.toISOString();
  const data = {
    type: "test",
    transactionId,
    id: transactionId,
    clientId: merchantId,
    amount: 0,
    fee: 0,
    netAmount: 0,
    actualBalance: null,
    currencyType: "USDT-TRC20",
    network: "USDT-TRC20",
    status: "test",
    createdAt: at,
    updatedAt: at,
    confirmedAt: at,
    blockchainTxHash: randomBytes(32).toString("hex"),
    walletAddress: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
    orderId: null,
    reference: null,
    externalUserId: null,
    checkoutSessionId: null,
    metadata: null,
    rejectionReason: null,
    ...presentSessionPrice(null),
  };
  return {
    transactionId,
    body: serializeWebhookBody("Test webhook from stablegate", data, transactionId, environment),
  };
}
