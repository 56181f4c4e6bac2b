import type { Db } from "../db/database.js";
import { AppError } from "../domain/errors.js";
import { depositPosting, holdPosting, releasePosting, settlePosting } from "../domain/ledger.js";
import { formatAmount } from "../domain/money.js";
import { type PostHooks, type PostingContext, type PostResult, postLedger } from "./post.js";

/**
 * The ledger operations the payment flows call, each inside the flow's own transaction and each
 * idempotent on its business key (calling twice for the same transaction posts once).
 */

/** Credits a deposit: `received` arrived on-chain; the merchant gets `received - fee`. */
export function creditDeposit(
  trx: Db,
  ctx: PostingContext,
  received: bigint,
  fee: bigint,
): Promise<PostResult> {
  return postLedger(trx, ctx, depositPosting(ctx.transactionId, received, fee));
}

/** Holds `amount` of the available balance for a withdrawal or payout; `insufficient_balance` as a value. */
export function holdFunds(
  trx: Db,
  ctx: PostingContext,
  amount: bigint,
  hooks?: PostHooks,
): Promise<PostResult> {
  return postLedger(trx, ctx, holdPosting(ctx.transactionId, amount), hooks);
}

/** Returns a hold to the available balance (rejected or failed). */
export function releaseHold(trx: Db, ctx: PostingContext, amount: bigint): Promise<PostResult> {
  return postLedger(trx, ctx, releasePosting(ctx.transactionId, amount));
}

/** Completes a hold: `amount - fee` left on-chain, `fee` to the fee account. */
export function settleHold(trx: Db, ctx: PostingContext, amount: bigint, fee: bigint): Promise<PostResult> {
  return postLedger(trx, ctx, settlePosting(ctx.transactionId, amount, fee));
}

/** For request handlers: a hold that could not be made becomes 422 INSUFFICIENT_BALANCE. */
export function requirePosted(result: PostResult): void {
  if (result.status === "insufficient_balance") {
    throw new AppError("INSUFFICIENT_BALANCE", "The available balance is too low for this amount.", {
      available: formatAmount(result.balance),
      required: formatAmount(result.needed),
    });
  }
}
