import type { AuditRecorder } from "../audit/index.js";
import type { ChainRegistry } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { ListParams } from "../domain/list.js";
import type { TransactionRecord, TransactionStatus } from "../domain/transaction.js";
import { type Approver, approvalsRequired } from "../domain/withdrawal.js";
import { type IdempotencyContext, type IdempotentCall, runIdempotent } from "../idempotency/index.js";
import { getSettings } from "../merchants/index.js";
import type { Screening } from "../screening/index.js";
import { findTransaction, listTransactions } from "../transactions/index.js";
import { listApprovals } from "./approvals.js";
import { checkAffordable, checkDestination, checkNotBlocked, type SystemAddresses } from "./destinations.js";
import {
  approveWithdrawal,
  createWithdrawal,
  type NewWithdrawal,
  rejectWithdrawal,
  validateWithdrawal,
  type WithdrawalDeps,
} from "./service.js";

/**
 * The use cases of withdrawal requests (docs/api-reference.md#withdrawals) and payouts (docs/api-reference.md#payouts) as the channels call
 * them: each owns its transaction (and, for a creation, its `Idempotency-Key`).
 */
export interface WithdrawalDesk extends WithdrawalDeps {
  db: Db;
  idempotency: IdempotencyContext;
  /** Which chains are available (CHAIN_UNAVAILABLE otherwise). */
  chains: Pick<ChainRegistry, "get">;
  /** Derives the gateway's system wallets, which no withdrawal or payout may name (`checkDestination`). */
  addresses: SystemAddresses;
  /** The screening provider (off without SCREENING_URL): with the token's freeze list, `checkNotBlocked`. */
  screening: Screening;
}

export type Scope = { merchantId: string; environment: Environment };

/**
 * `POST /withdrawal-requests`: the chain must be available and the destination an outside one (no
 * burn address, none of the gateway's own: `checkDestination`, before anything is held); then,
 * once per `Idempotency-Key`, the request is created in its own transaction (`createWithdrawal`).
 */
export async function requestWithdrawal(
  desk: WithdrawalDesk,
  scope: Scope,
  input: NewWithdrawal,
  call: IdempotentCall<TransactionRecord>,
) {
  desk.chains.get(input.currencyType, scope.environment);
  await checkDestination(desk.db, desk.addresses, scope.environment, input.currencyType, input.walletAddress);
  // The format and the amount first (a 400 names them, the same on a replay).
  validateWithdrawal(desk.fees, "withdrawal", input);
  return runIdempotent(
    desk.idempotency,
    call.idempotency(),
    async (trx) => call.answer(await createWithdrawal(trx, desk, scope, input)),
    {
      // Only for a request that will run (a replay gets its stored answer, whatever the balance or
      // the destination's state now): the balance, then the chain's freeze list and the provider.
      beforeRun: async () => {
        await checkAffordable(desk.db, scope, input.currencyType, input.amount);
        await checkNotBlocked(desk, scope, input.currencyType, input.walletAddress);
      },
    },
  );
}

/**
 * Approves a pending withdrawal request (executed once it has its approvals), in its own
 * transaction, with its audit record.
 */
export async function approveWithdrawalRequest(
  desk: WithdrawalDesk,
  scope: Scope,
  id: string,
  approver: Approver,
  audit?: AuditRecorder,
) {
  return desk.db.transaction().execute(async (trx) => {
    const r = await approveWithdrawal(trx, desk, scope, id, approver);
    await audit?.record(trx, {
      details: { approvals: r.approvals.length, approvalsRequired: r.required, status: r.record.status },
    });
    return r;
  });
}

/** One withdrawal request of the merchant with its approvals (and how many it needs now), or 404. */
export async function getWithdrawalWithApprovals(db: Db, scope: Scope, id: string) {
  const record = await getWithdrawal(db, scope, id);
  const settings = await getSettings(db, scope.merchantId, scope.environment);
  const required = approvalsRequired(settings.dualApprovalThreshold[record.currencyType], record.amount);
  return { record, approvals: await listApprovals(db, id), required };
}

/** Rejects a pending withdrawal request (its hold released), in its own transaction, with its audit record. */
export async function rejectWithdrawalRequest(
  desk: WithdrawalDesk,
  scope: Scope,
  id: string,
  reason: string | null,
  audit?: AuditRecorder,
) {
  return desk.db.transaction().execute(async (trx) => {
    const t = await rejectWithdrawal(trx, desk, scope, id, reason);
    await audit?.record(trx);
    return t;
  });
}

/** One transaction of the given kind, or 404 in the kind's words. */
export async function findOfKind(
  db: Db,
  scope: Scope,
  id: string,
  type: "withdrawal" | "payout",
): Promise<TransactionRecord> {
  const t = await findTransaction(db, scope, id);
  if (!t || t.type !== type) {
    throw AppError.notFound(
      type === "withdrawal" ? "No withdrawal request with this id." : "No payout with this id.",
    );
  }
  return t;
}

/** One withdrawal request of the merchant, or 404. */
export function getWithdrawal(db: Db, scope: Scope, id: string): Promise<TransactionRecord> {
  return findOfKind(db, scope, id, "withdrawal");
}

/** A page of the merchant's withdrawal requests in a status (default: pending). */
export function listWithdrawals(
  db: Db,
  scope: Scope,
  status: TransactionStatus | undefined,
  page: ListParams,
): Promise<{ rows: TransactionRecord[]; total: number }> {
  return listTransactions(db, scope, { type: "withdrawal", status: status ?? "pending" }, page);
}
