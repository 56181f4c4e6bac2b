import type { AuditRecorder } from "../audit/index.js";
import { type AuthKit, checkOtp, spendCheckedOtp } from "../auth/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { ListParams } from "../domain/list.js";
import type { TransactionRecord } from "../domain/transaction.js";
import { type IdempotentAnswer, type IdempotentCall, runIdempotent } from "../idempotency/index.js";
import { listTransactions } from "../transactions/index.js";
import { checkAffordable, checkDestination, checkNotBlocked } from "./destinations.js";
import { findOfKind, type Scope, type WithdrawalDesk } from "./requests.js";
import { sendPayout, validateWithdrawal } from "./service.js";

export interface PayoutDesk extends WithdrawalDesk {
  /** The dashboard's kit: the payout's e-mailed OTP is checked and spent with it. */
  kit: AuthKit;
}

export interface NewPayout {
  amount: bigint;
  currencyType: CurrencyType;
  walletAddress: string;
  /** The e-mailed payout code (docs/api-reference.md#dashboardcreatepayout). */
  otp: string;
}

export interface PayoutCall extends IdempotentCall<TransactionRecord> {
  /**
   * The channel's step-up check (production: the OTP, and the TOTP when 2FA is on): the id of the
   * checked code, or null when the channel asks none (sandbox: then `otp` is checked here).
   */
  stepUp: () => Promise<string | null>;
  /** The payout's audit record, written in its transaction. */
  audit?: AuditRecorder;
}

/**
 * `POST /api/v1/dashboard/payouts` (docs/api-reference.md#dashboardcreatepayout): everything that can be refused is checked
 * before the single-use OTP is tried (the destination too: no burn address, none of the gateway's
 * own); the OTP is checked only by a request that will run (a retry
 * with the same Idempotency-Key replays its answer instead of "this code was already used") and
 * spent in the payout's transaction (a payout refused there — the balance, a chain error — rolls
 * back and leaves the code usable). The payout is held and executed at once.
 */
export async function createPayout(
  desk: PayoutDesk,
  who: Scope & { userId: string },
  input: NewPayout,
  call: PayoutCall,
): Promise<IdempotentAnswer> {
  desk.chains.get(input.currencyType, who.environment);
  validateWithdrawal(desk.fees, "payout", input);
  await checkDestination(desk.db, desk.addresses, who.environment, input.currencyType, input.walletAddress);
  let otpId = "";
  return runIdempotent(
    desk.idempotency,
    call.idempotency(),
    async (trx) => {
      await spendCheckedOtp(desk.kit, trx, otpId);
      const t = await sendPayout(trx, desk, who, {
        amount: input.amount,
        currencyType: input.currencyType,
        walletAddress: input.walletAddress,
      });
      await call.audit?.record(trx, { targetId: t.id });
      return call.answer(t);
    },
    {
      beforeRun: async () => {
        otpId = (await call.stepUp()) ?? (await checkOtp(desk.kit, who.userId, "payout", input.otp));
        // After the codes (nothing is asked of the chain or the provider for a caller without
        // them), before anything is held; a refusal here leaves the code unspent.
        await checkAffordable(desk.db, who, input.currencyType, input.amount);
        await checkNotBlocked(desk, who, input.currencyType, input.walletAddress);
      },
    },
  );
}

/** One payout of the merchant (404 if none). */
export function getPayout(db: Db, scope: Scope, id: string): Promise<TransactionRecord> {
  return findOfKind(db, scope, id, "payout");
}

/** A page of the merchant's payouts. */
export function listPayouts(
  db: Db,
  scope: Scope,
  page: ListParams,
): Promise<{ rows: TransactionRecord[]; total: number }> {
  return listTransactions(db, scope, { type: "payout" }, page);
}
