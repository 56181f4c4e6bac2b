import type { Db } from "../db/database.js";
import { AppError } from "../domain/errors.js";
import {
  depositPosting,
  freezeCustody,
  heldDepositPosting,
  holdPosting,
  type Posting,
  releasedDepositPosting,
  releasePosting,
  returnedDepositPosting,
  settlePosting,
  unfreezeCustody,
  writeOffFrozen,
} from "../domain/ledger.js";
import { formatAmount } from "../domain/money.js";
import {
  type CustodyContext,
  type PostHooks,
  type PostingContext,
  type PostResult,
  postLedger,
} from "./post.js";

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

/** Records a held deposit (frozen or refused sender): `received` goes to the merchant's `held`. */
export function holdDeposit(trx: Db, ctx: PostingContext, received: bigint): Promise<PostResult> {
  return postLedger(trx, ctx, heldDepositPosting(ctx.transactionId, received));
}

/** A held deposit released: `received - fee` to available, `fee` to the fee account. */
export function releaseHeldDeposit(
  trx: Db,
  ctx: PostingContext,
  received: bigint,
  fee: bigint,
): Promise<PostResult> {
  return postLedger(trx, ctx, releasedDepositPosting(ctx.transactionId, received, fee));
}

/** A held deposit's return confirmed on-chain: out of `held`. */
export function settleReturnedDeposit(trx: Db, ctx: PostingContext, received: bigint): Promise<PostResult> {
  return postLedger(trx, ctx, returnedDepositPosting(ctx.transactionId, received));
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

/**
 * Keeps the ledger's `frozen` custody of one own address the issuer froze equal to the coins on it
 * (issue #40): `from` what was moved to `frozen` before, `to` the address's balance now. More while
 * frozen: moved out of the usable custody. Less: a frozen address sends nothing, so the issuer
 * destroyed it (`written_off`). `released`: the freeze was lifted, and what is still there goes
 * back to the usable custody (after writing off what went missing meanwhile). `keyOf(n)` numbers
 * the postings of the address. Returns how many it posted.
 */
export async function adjustFrozenCustody(
  trx: Db,
  ctx: CustodyContext,
  change: { from: bigint; to: bigint; released: boolean },
  keyOf: (n: number) => string,
): Promise<number> {
  const { from, to, released } = change;
  const postings: Posting[] = [];
  const destroyed = from > to ? from - to : 0n;
  if (destroyed > 0n) postings.push(writeOffFrozen(keyOf(postings.length), destroyed));
  else if (to > from && !released) postings.push(freezeCustody(keyOf(postings.length), to - from));
  // Released: what was frozen and is still there goes back (what arrived since was never moved).
  const left = from - destroyed;
  if (released && left > 0n) postings.push(unfreezeCustody(keyOf(postings.length), left));
  for (const p of postings) {
    const r = await postLedger(trx, ctx, p);
    if (r.status !== "posted") throw new Error(`custody posting ${p.businessKey}: ${r.status}`);
  }
  return postings.length;
}
