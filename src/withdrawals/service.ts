import { normalizeAddress } from "../chains/index.js";
import type { Db } from "../db/database.js";
import { CURRENCY_TYPES, type CurrencyType, currencyOf, FAMILY_NAMES } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError, type FieldError } from "../domain/errors.js";
import { computeFee, type FeeSchedule } from "../domain/fees.js";
import { newId } from "../domain/ids.js";
import { formatAmount } from "../domain/money.js";
import type { TransactionRecord } from "../domain/transaction.js";
import {
  type Approver,
  approvalsRequired,
  type RecordedApproval,
  withdrawalPolicy,
} from "../domain/withdrawal.js";
import { holdFunds, releaseHold, requirePosted, settleHold } from "../ledger/index.js";
import { getSettings } from "../merchants/index.js";
import type { TransferIntent, TransferOutcome } from "../sender/index.js";
import { insertTransaction, lockTransaction, updateTransaction } from "../transactions/index.js";
import { enqueueWebhookEvent, webhookData } from "../webhooks/index.js";
import { addApproval, listApprovals, standingApprovals } from "./approvals.js";

/** Queues an intent in the caller's transaction: nothing is sent unless that transaction commits. */
export type RequestTransfer = (trx: Db, intent: TransferIntent) => Promise<void>;

export interface WithdrawalDeps {
  fees: FeeSchedule;
  requestTransfer: RequestTransfer;
  now: () => Date;
}

type Scope = { merchantId: string; environment: Environment };

export interface NewWithdrawal {
  amount: bigint;
  currencyType: CurrencyType;
  walletAddress: string;
  externalUserId?: string | null;
  reference?: string | null;
}

/**
 * Checks what can be checked before anything is written: the destination for its network (see
 * docs/api-reference.md#createwithdrawalrequest: TRON base58check, EVM hex with a valid checksum when mixed-case) and an amount above the fee.
 * Returns the canonical address and the fee.
 */
export function validateWithdrawal(
  fees: FeeSchedule,
  kind: "withdrawal" | "payout",
  input: NewWithdrawal,
): { address: string; fee: bigint } {
  const errors: FieldError[] = [];
  let address = "";
  try {
    address = normalizeAddress(input.currencyType, input.walletAddress);
  } catch {
    // An address of another chain family (a TRON address for an EVM currency type, or the reverse)
    // is named as such: the likeliest mistake.
    const own = currencyOf(input.currencyType).definition.family;
    const other = CURRENCY_TYPES.find((c) => {
      if (currencyOf(c).definition.family === own) return false;
      try {
        normalizeAddress(c, input.walletAddress);
        return true;
      } catch {
        return false;
      }
    });
    errors.push({
      field: "walletAddress",
      message: other
        ? `is ${article(FAMILY_NAMES[currencyOf(other).definition.family])} address, not ${article(FAMILY_NAMES[own])} (${input.currencyType}) one`
        : `is not a valid ${input.currencyType} address`,
    });
  }
  const { fee } = computeFee(fees[input.currencyType][kind], input.amount);
  if (input.amount <= fee) {
    errors.push({
      field: "amount",
      message: `must be greater than the network fee of ${formatAmount(fee)} ${currencyOf(input.currencyType).token}`,
    });
  }
  if (errors.length > 0) throw AppError.validation(errors);
  return { address, fee };
}

/**
 * `POST /withdrawal-requests`, in the caller's transaction: the amount is held (422 when the available
 * balance is short), then by the merchant's settings either executed at once (`processing`, no
 * webhook until the outcome) or held for approval (`pending`, with its webhook).
 */
export async function createWithdrawal(
  trx: Db,
  deps: WithdrawalDeps,
  scope: Scope,
  input: NewWithdrawal,
): Promise<TransactionRecord> {
  const { address, fee } = validateWithdrawal(deps.fees, "withdrawal", input);
  const settings = await getSettings(trx, scope.merchantId, scope.environment);
  const policy = withdrawalPolicy(settings, input.currencyType, input.amount);
  const record = await insertHeld(trx, deps, scope, "withdrawal", {
    ...input,
    address,
    fee,
    status: policy === "auto" ? "processing" : "pending",
  });
  if (policy === "auto") await execute(trx, deps, record);
  else await notify(trx, record);
  return record;
}

/** A dashboard payout (after its OTP was checked), in the caller's transaction: held and executed at once. */
export async function sendPayout(
  trx: Db,
  deps: WithdrawalDeps,
  scope: Scope,
  input: NewWithdrawal,
): Promise<TransactionRecord> {
  const { address, fee } = validateWithdrawal(deps.fees, "payout", input);
  const record = await insertHeld(trx, deps, scope, "payout", {
    ...input,
    address,
    fee,
    status: "processing",
  });
  await execute(trx, deps, record);
  return record;
}

export interface Approval {
  /** The request after this approval: still `pending` when it waits for a second approver. */
  record: TransactionRecord;
  approvals: RecordedApproval[];
  required: 1 | 2;
}

/**
 * Approve a `pending` withdrawal (409 INVALID_STATE otherwise). The approval is recorded; once the
 * request has the approvals it needs (two different approvers above the currency's
 * `dualApprovalThreshold`, else one) it is executed now. The same approver twice is refused (409).
 * Under the request's row lock: of concurrent approvals, exactly one completes the set and
 * executes; the threshold is read at approval time (a change applies to requests still pending).
 */
export async function approveWithdrawal(
  trx: Db,
  deps: WithdrawalDeps,
  scope: Scope,
  id: string,
  approver: Approver,
): Promise<Approval> {
  const t = await lockPending(trx, scope, id);
  const settings = await getSettings(trx, scope.merchantId, scope.environment);
  const required = approvalsRequired(settings.dualApprovalThreshold[t.currencyType], t.amount);
  if (!(await addApproval(trx, t.id, approver, deps.now())))
    throw new AppError(
      "INVALID_STATE",
      approver.type === "api_key" && approver.member === null
        ? "The API-key channel already approved this withdrawal request; a member's approval is needed."
        : approver.type === "api_key"
          ? "The member this API key pair acts for already approved this withdrawal request; another member's approval is needed."
          : "You already approved this withdrawal request (with your session or a key pair acting for you); another member's approval is needed.",
      { status: t.status, approvalsRequired: required },
    );
  const approvals = await listApprovals(trx, t.id);
  // Counted: the approvals of people who may still approve (a removed or demoted approver's no more).
  if ((await standingApprovals(trx, t.id, scope.merchantId, scope.environment)) < required)
    return { record: t, approvals, required };
  const updated = await updateTransaction(trx, t.id, { status: "processing", updatedAt: deps.now() });
  await execute(trx, deps, updated);
  return { record: updated, approvals, required };
}

/** Reject a `pending` withdrawal: the hold is released and the second webhook sent. */
export async function rejectWithdrawal(
  trx: Db,
  deps: WithdrawalDeps,
  scope: Scope,
  id: string,
  reason: string | null,
) {
  const t = await lockPending(trx, scope, id);
  const updated = await updateTransaction(trx, t.id, {
    status: "rejected",
    rejectionReason: reason,
    updatedAt: deps.now(),
  });
  await releaseHold(trx, postingContext(updated), updated.amount);
  await notify(trx, updated);
  return updated;
}

/**
 * The sending pipeline's report for a withdrawal or payout, in the pipeline's transaction:
 * `confirmed` → `completed` (hold settled: `netAmount` left on-chain, `fee` to the fee account);
 * `failed` → `failed` (hold released). One webhook. A report for a transaction that is not
 * `processing` changes nothing (it was already applied).
 */
export async function applyTransferOutcome(
  trx: Db,
  now: Date,
  outcome: TransferOutcome,
): Promise<TransactionRecord | null> {
  const t = await lockTransaction(trx, outcome.intentId);
  if (t?.status !== "processing" || (t.type !== "withdrawal" && t.type !== "payout")) return null;
  const ctx = postingContext(t);
  let updated: TransactionRecord;
  if (outcome.status === "confirmed") {
    updated = await updateTransaction(trx, t.id, {
      status: "completed",
      blockchainTxHash: outcome.txHash,
      confirmedAt: now,
      updatedAt: now,
    });
    await settleHold(trx, ctx, t.amount, t.fee);
  } else {
    updated = await updateTransaction(trx, t.id, {
      status: "failed",
      blockchainTxHash: outcome.txHash,
      // A destination frozen or refused between the request and the signing says so (issue #40).
      ...(outcome.reason?.startsWith("destination_blocked") ? { rejectionReason: outcome.reason } : {}),
      updatedAt: now,
    });
    await releaseHold(trx, ctx, t.amount);
  }
  await notify(trx, updated);
  return updated;
}

async function insertHeld(
  trx: Db,
  deps: WithdrawalDeps,
  scope: Scope,
  type: "withdrawal" | "payout",
  w: NewWithdrawal & { address: string; fee: bigint; status: "pending" | "processing" },
): Promise<TransactionRecord> {
  const record = await insertTransaction(trx, {
    id: newId("tx"),
    merchantId: scope.merchantId,
    environment: scope.environment,
    type,
    status: w.status,
    currencyType: w.currencyType,
    amount: w.amount,
    fee: w.fee,
    walletAddress: w.address,
    externalUserId: w.externalUserId ?? null,
    reference: w.reference ?? null,
    createdAt: deps.now(),
  });
  requirePosted(await holdFunds(trx, postingContext(record), w.amount));
  return record;
}

async function execute(trx: Db, deps: WithdrawalDeps, t: TransactionRecord): Promise<void> {
  await deps.requestTransfer(trx, {
    intentId: t.id,
    kind: t.type === "payout" ? "payout" : "withdrawal",
    network: t.currencyType,
    environment: t.environment,
    to: t.walletAddress ?? "",
    amount: t.netAmount,
  });
}

async function lockPending(trx: Db, scope: Scope, id: string): Promise<TransactionRecord> {
  const t = await lockTransaction(trx, id);
  if (
    !t ||
    t.merchantId !== scope.merchantId ||
    t.environment !== scope.environment ||
    t.type !== "withdrawal"
  ) {
    throw AppError.notFound("No withdrawal request with this id.");
  }
  if (t.status !== "pending") {
    throw new AppError("INVALID_STATE", `The withdrawal request is ${t.status}, not pending.`, {
      status: t.status,
    });
  }
  return t;
}

function postingContext(t: TransactionRecord) {
  return {
    merchantId: t.merchantId,
    environment: t.environment,
    currencyType: t.currencyType,
    transactionId: t.id,
  };
}

async function notify(trx: Db, t: TransactionRecord): Promise<void> {
  await enqueueWebhookEvent(trx, {
    merchantId: t.merchantId,
    environment: t.environment,
    transactionId: t.id,
    type: t.type,
    transactionStatus: t.status,
    data: webhookData(t),
  });
}

/** "an EVM", "a TRON". */
function article(word: string): string {
  return `${/^[AEIOU]/.test(word) ? "an" : "a"} ${word}`;
}
