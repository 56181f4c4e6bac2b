import type { Db } from "../db/database.js";
import { sessionOutcomeAtDeadline, sessionTransferOutcome } from "../domain/checkout.js";
import { type CurrencyType, depositAccountOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import { updateTransaction } from "../transactions/index.js";
import type { ConfirmedTransfer, DepositHandler } from "../watcher/index.js";
import {
  findCheckoutSessionsByIds,
  hasConfirmingTransferInTime,
  lockCheckoutSession,
  underpaymentToleranceBp,
} from "./sessions-store.js";
import { closeSession, recordSingleTransferDeposit, type SettleDeps } from "./settle.js";

export interface DepositHandlerDeps extends SettleDeps {
  clock: Clock;
}

/**
 * The deposit logic's entry point for the chain watcher (`DepositHandoff`): called once per
 * confirmed transfer to a watched address, inside the transaction that marks the transfer handed
 * off. Whether a transfer was in time for its session is decided by its block's timestamp, not by
 * when its confirmations completed. Whatever the transfer meets — an open session, a closed one, a permanent wallet — it ends in
 * the database: nothing received is ever lost (README.md#money-when-a-payment-counts-and-books-that-match).
 */
export function createDepositHandler(deps: DepositHandlerDeps): DepositHandler {
  return async (trx, transfer) => {
    // A zero-value Transfer event (some tokens allow them) carries nothing to credit.
    if (transfer.amount <= 0n) return;
    if (!transfer.referenceId) {
      throw new Error(`watched address ${transfer.address} has no record to credit`);
    }
    // What the registered sender check answered before this transaction (`depositSenderCheck`).
    const holdReason = transfer.holdReason ?? null;
    if (holdReason !== null)
      await onOwnDepositTransfer(trx, deps, transfer, transfer.referenceId, {
        holdReason,
        ...(transfer.wrongNetwork ? { wrongNetwork: true } : {}),
      });
    else if (transfer.wrongNetwork)
      await onOwnDepositTransfer(trx, deps, transfer, transfer.referenceId, { wrongNetwork: true });
    else if (transfer.purpose === "checkout")
      await onSessionTransfer(trx, deps, transfer, transfer.referenceId);
    else await onWalletTransfer(trx, deps, transfer, transfer.referenceId);
  };
}

async function onSessionTransfer(
  trx: Db,
  deps: DepositHandlerDeps,
  transfer: ConfirmedTransfer,
  sessionId: string,
): Promise<void> {
  // Every writer of a session takes this lock first: a payment and the expiry job see one state.
  const session = await lockCheckoutSession(trx, sessionId);
  if (!session)
    throw new Error(`checkout session ${sessionId} of watched address ${transfer.address} is missing`);
  const t = session.transaction;
  assertRecordOfTransfer(transfer, {
    what: `checkout session ${t.id}`,
    merchantId: t.merchantId,
    environment: t.environment,
    network: t.currencyType,
    address: session.address,
  });
  const now = new Date(deps.clock.now());
  const toleranceBp = t.status === "pending" ? await underpaymentToleranceBp(trx, session) : 0;
  const received = t.actualBalance ?? 0n;
  const outcome = sessionTransferOutcome(
    { status: t.status, amount: t.amount, received, expiresAt: session.expiresAt, toleranceBp },
    transfer,
  );
  switch (outcome.kind) {
    case "accumulate":
      // Short so far: remember what arrived; it is credited when the session closes either way.
      await updateTransaction(trx, t.id, {
        actualBalance: outcome.received,
        blockchainTxHash: transfer.txHash,
        updatedAt: now,
      });
      return;
    case "confirm":
      await closeSession(trx, deps, session, {
        status: "confirmed",
        received: outcome.received,
        txHash: transfer.txHash,
        now,
      });
      return;
    case "expire_then_late":
      // Mined after the deadline. A transfer in time that is still waiting for its hand-off (its
      // handler failed and backs off) decides first: this one is offered again later.
      if (await hasConfirmingTransferInTime(trx, session)) {
        throw new Error(
          `checkout session ${t.id} has a transfer in time still to hand off; ${transfer.txHash} waits`,
        );
      }
      await closeSession(trx, deps, session, {
        status: sessionOutcomeAtDeadline({ amount: t.amount, received, toleranceBp }),
        received,
        txHash: null,
        now,
      });
      break;
    case "late":
      break;
  }
  await recordSingleTransferDeposit(trx, deps, {
    merchantId: t.merchantId,
    environment: t.environment,
    currencyType: t.currencyType,
    amount: transfer.amount,
    address: transfer.address,
    txHash: transfer.txHash,
    observationId: transfer.observationId,
    now,
    checkoutSessionId: t.id,
    orderId: t.orderId,
    callbackUrl: session.callbackUrl,
    metadata: session.metadata,
    price: session.price,
  });
}

/**
 * A transfer that is its own deposit in the currency type it arrived as, linked to the session
 * (`checkoutSessionId`) or the wallet, never counting toward the session, whose status and
 * amounts stay as they are: one paid on another network than its address was made for
 * (README.md#wrong-network-payments, `wrongNetwork`), or one from a frozen or refused sender
 * (README.md#frozen-funds, `held` with its `holdReason`).
 */
async function onOwnDepositTransfer(
  trx: Db,
  deps: DepositHandlerDeps,
  transfer: ConfirmedTransfer,
  referenceId: string,
  kind: { wrongNetwork?: boolean; holdReason?: string },
): Promise<void> {
  const deposit = {
    currencyType: transfer.network,
    amount: transfer.amount,
    address: transfer.address,
    txHash: transfer.txHash,
    observationId: transfer.observationId,
    now: new Date(deps.clock.now()),
    ...kind,
  };
  if (transfer.purpose === "checkout") {
    // Read, not locked: this deposit changes nothing of the session.
    const [session] = await findCheckoutSessionsByIds(trx, [referenceId]);
    if (!session)
      throw new Error(`checkout session ${referenceId} of watched address ${transfer.address} is missing`);
    const t = session.transaction;
    assertRecordOfTransfer(
      transfer,
      {
        what: `checkout session ${t.id}`,
        merchantId: t.merchantId,
        environment: t.environment,
        network: t.currencyType,
        address: session.address,
      },
      kind.wrongNetwork === true,
    );
    await recordSingleTransferDeposit(trx, deps, {
      ...deposit,
      merchantId: t.merchantId,
      environment: t.environment,
      checkoutSessionId: t.id,
      orderId: t.orderId,
      callbackUrl: session.callbackUrl,
      metadata: session.metadata,
      price: session.price,
    });
    return;
  }
  const wallet = await findDepositWallet(trx, referenceId);
  if (!wallet)
    throw new Error(`deposit wallet ${referenceId} of watched address ${transfer.address} is missing`);
  assertRecordOfTransfer(transfer, walletRecord(wallet), kind.wrongNetwork === true);
  await recordSingleTransferDeposit(trx, deps, {
    ...deposit,
    merchantId: wallet.merchant_id,
    environment: wallet.environment,
    depositWalletId: wallet.id,
    externalUserId: wallet.external_user_id,
  });
}

async function onWalletTransfer(
  trx: Db,
  deps: DepositHandlerDeps,
  transfer: ConfirmedTransfer,
  walletId: string,
): Promise<void> {
  const wallet = await findDepositWallet(trx, walletId);
  if (!wallet)
    throw new Error(`deposit wallet ${walletId} of watched address ${transfer.address} is missing`);
  assertRecordOfTransfer(transfer, walletRecord(wallet));
  await recordSingleTransferDeposit(trx, deps, {
    merchantId: wallet.merchant_id,
    environment: wallet.environment,
    currencyType: wallet.network,
    amount: transfer.amount,
    address: transfer.address,
    txHash: transfer.txHash,
    observationId: transfer.observationId,
    now: new Date(deps.clock.now()),
    depositWalletId: wallet.id,
    externalUserId: wallet.external_user_id,
  });
}

function findDepositWallet(trx: Db, walletId: string) {
  return trx.selectFrom("deposit_wallets").selectAll().where("id", "=", walletId).executeTakeFirst();
}

function walletRecord(wallet: {
  id: string;
  merchant_id: string;
  environment: Environment;
  network: CurrencyType;
  address: string;
}) {
  return {
    what: `deposit wallet ${wallet.id}`,
    merchantId: wallet.merchant_id,
    environment: wallet.environment,
    network: wallet.network,
    address: wallet.address,
  };
}

/**
 * The record a watched address points to (`reference_id`) must be of the transfer's own chain: its
 * environment, its currency type (a wrong-network twin's: one of the same key space), its address
 * and its merchant. The deposit is booked in the record's environment and currency type, and the
 * api's database role can write both the watched rows and the records (outside review of #38): a
 * sandbox payment booked in production, or a cheap network's as an expensive one's, would be money
 * from nothing. A mismatch credits nothing: the hand-off fails (and is retried; the observation
 * stays), and the alert `deposit_record_mismatch` names it.
 */
export class DepositRecordMismatchError extends Error {
  override readonly name = "DepositRecordMismatchError";
  readonly alert = "deposit_record_mismatch";
}

function assertRecordOfTransfer(
  transfer: ConfirmedTransfer,
  record: {
    what: string;
    merchantId: string;
    environment: Environment;
    network: CurrencyType;
    address: string;
  },
  twin = false,
): void {
  const network = twin
    ? depositAccountOf(record.network) === depositAccountOf(transfer.network)
    : record.network === transfer.network;
  const wrong = [
    record.environment !== transfer.environment && `environment ${record.environment}`,
    !network && `currency type ${record.network}`,
    record.address !== transfer.address && `address ${record.address}`,
    record.merchantId !== transfer.merchantId && `merchant ${record.merchantId}`,
  ].filter(Boolean);
  if (wrong.length > 0)
    throw new DepositRecordMismatchError(
      `deposit_record_mismatch: ${record.what} of watched address ${transfer.address} (${transfer.network} ${transfer.environment}) has ${wrong.join(", ")}; nothing credited`,
    );
}
