import type { Db } from "../db/database.js";
import type { CheckoutSessionRecord, SessionPrice } from "../domain/checkout.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { depositFee, type FeeSchedule } from "../domain/fees.js";
import { newId } from "../domain/ids.js";
import type { TransactionRecord } from "../domain/transaction.js";
import { creditDeposit, holdDeposit } from "../ledger/index.js";
import { insertTransaction, updateTransaction } from "../transactions/index.js";
import { enqueueWebhookEvent, type WebhookSessionFields, webhookData } from "../webhooks/index.js";
import { closeCheckoutSession } from "./sessions-store.js";

/**
 * The writes that end a deposit, each in the caller's transaction together with its ledger posting
 * and its webhook event (transactional outbox): a deposit is credited exactly when its status
 * change commits, and the merchant hears of it exactly then.
 */

export interface SettleDeps {
  fees: FeeSchedule;
}

/**
 * Closes an open session as `confirmed` (its total in time reached `amount × (1 − tolerance)`) or
 * `failed` (its deadline passed first): the whole `received` is credited (overpayment included; a partial payment of an expired session
 * too), the session stops being open, and the `deposit` webhook goes to its `callbackUrl` or the
 * environment's `webhookUrl`.
 */
export async function closeSession(
  trx: Db,
  deps: SettleDeps,
  session: CheckoutSessionRecord,
  outcome: { status: "confirmed" | "failed"; received: bigint; txHash: string | null; now: Date },
): Promise<TransactionRecord> {
  const t = session.transaction;
  const fee = depositFee(deps.fees, t.currencyType, outcome.received);
  const updated = await updateTransaction(trx, t.id, {
    status: outcome.status,
    actualBalance: outcome.received,
    fee,
    // What was credited: the merchant can book netAmount as is (README.md#money-when-a-payment-counts-and-books-that-match).
    netAmount: outcome.received - fee,
    blockchainTxHash: outcome.txHash ?? t.blockchainTxHash,
    confirmedAt: outcome.status === "confirmed" ? outcome.now : null,
    updatedAt: outcome.now,
  });
  if (outcome.received > 0n) {
    await creditDeposit(trx, postingContext(updated), outcome.received, fee);
  }
  await closeCheckoutSession(trx, t.id, outcome.now);
  await notify(trx, updated, session.callbackUrl, { metadata: session.metadata, price: session.price });
  return updated;
}

/**
 * A deposit made of one transfer, confirmed and credited at once: a payment to a `/wallet/generate`
 * address, or a late payment to a closed session's address (linked by `checkoutSessionId`).
 * `chainObservationId` is unique: the same transfer never becomes two deposits.
 */
export async function recordSingleTransferDeposit(
  trx: Db,
  deps: SettleDeps,
  d: {
    merchantId: string;
    environment: Environment;
    currencyType: CurrencyType;
    amount: bigint;
    address: string;
    txHash: string;
    observationId: string;
    now: Date;
    checkoutSessionId?: string;
    orderId?: string | null;
    depositWalletId?: string;
    externalUserId?: string | null;
    /** Where the webhook goes (a session's callbackUrl); else the environment's webhookUrl. */
    callbackUrl?: string | null;
    /** The session's metadata (a late payment), sent in the webhook's `data.metadata`. */
    metadata?: Record<string, unknown> | null;
    /** The session's price in fiat (a late or wrong-network payment to it), in the webhook's price fields. */
    price?: SessionPrice | null;
    /** Paid on another network than the address was made for (`wrongNetwork: true`). */
    wrongNetwork?: boolean;
    /**
     * A frozen or refused sender (README.md#frozen-funds): recorded `held` with this reason, its
     * amount in the merchant's `held` balance (never `available`), its webhook `held`; `fee` and
     * `netAmount` say what a release would credit. The sweeper leaves its address alone.
     */
    holdReason?: string;
  },
): Promise<TransactionRecord> {
  const fee = depositFee(deps.fees, d.currencyType, d.amount);
  const held = d.holdReason !== undefined;
  const record = await insertTransaction(trx, {
    id: newId("tx"),
    merchantId: d.merchantId,
    environment: d.environment,
    type: "deposit",
    status: held ? "held" : "confirmed",
    currencyType: d.currencyType,
    amount: d.amount,
    fee,
    actualBalance: d.amount,
    walletAddress: d.address,
    blockchainTxHash: d.txHash,
    confirmedAt: held ? null : d.now,
    createdAt: d.now,
    chainObservationId: d.observationId,
    checkoutSessionId: d.checkoutSessionId ?? null,
    orderId: d.orderId ?? null,
    depositWalletId: d.depositWalletId ?? null,
    externalUserId: d.externalUserId ?? null,
    wrongNetwork: d.wrongNetwork ?? false,
    holdReason: d.holdReason ?? null,
  });
  if (held) await holdDeposit(trx, postingContext(record), d.amount);
  else await creditDeposit(trx, postingContext(record), d.amount, fee);
  await notify(trx, record, d.callbackUrl ?? null, { metadata: d.metadata ?? null, price: d.price ?? null });
  return record;
}

function postingContext(t: TransactionRecord) {
  return {
    merchantId: t.merchantId,
    environment: t.environment,
    currencyType: t.currencyType,
    transactionId: t.id,
  };
}

async function notify(
  trx: Db,
  t: TransactionRecord,
  url: string | null,
  session: WebhookSessionFields,
): Promise<void> {
  await enqueueWebhookEvent(trx, {
    merchantId: t.merchantId,
    environment: t.environment,
    transactionId: t.id,
    type: "deposit",
    transactionStatus: t.status,
    data: webhookData(t, session),
    url,
  });
}
