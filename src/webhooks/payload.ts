import { randomBytes } from "node:crypto";
import type { Environment } from "../domain/environment.js";
import { newId } from "../domain/ids.js";

/** Webhook bodies (SPEC §6.2): `{ success: true, message, data }`, serialised once and stored. */

export type TransactionType = "deposit" | "withdrawal" | "payout";

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

/** The short status text of SPEC §6.2 (`message`), e.g. "Deposit confirmed". */
export function webhookMessage(type: TransactionType, status: string): string {
  return `${NOUN[type]} ${PHRASE[status] ?? `status changed to ${status}`}`;
}

/**
 * Serialises the body. `data` is the SPEC §2.2 transaction object, already JSON-shaped (amounts as
 * exact numbers); `id` is forced to equal `transactionId`.
 */
export function serializeWebhookBody(
  message: string,
  data: Record<string, unknown>,
  transactionId: string,
): string {
  return JSON.stringify({ success: true, message, data: { ...data, id: transactionId, transactionId } });
}

/**
 * The test delivery's body (its content is ours to choose: SPEC §6 "not shown"): a complete
 * transaction-shaped object with `type: "test"` so that no receiver mistakes it for money.
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
    currencyType: "USDT-TRC20",
    network: "USDT-TRC20",
    status: "test",
    createdAt: at,
    confirmedAt: at,
    blockchainTxHash: randomBytes(32).toString("hex"),
    walletAddress: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
    environment,
  };
  return {
    transactionId,
    body: JSON.stringify({ success: true, message: "Test webhook from stablegate", data }),
  };
}
