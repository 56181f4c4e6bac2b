/**
 * Double-entry postings, as pure values. A posting is a set of lines that sum to zero; a positive
 * amount credits an account (for a merchant account: money the gateway owes the merchant), a
 * negative amount debits it. The four movements the payment flows need are built here; the
 * database layer (`src/ledger/`) applies them atomically.
 */
export type MerchantAccountKind = "available" | "held";
/**
 * `chain_incoming`/`chain_outgoing`: the chain's custody (what arrived and what left); `fees`: what
 * the gateway earned; `frozen`: coins on an own address the token's issuer froze (moved out of the
 * usable custody while frozen); `written_off`: coins the issuer destroyed there (issue #40).
 */
export type SystemAccountKind = "chain_incoming" | "chain_outgoing" | "fees" | "frozen" | "written_off";

export type AccountRef =
  | { owner: "merchant"; kind: MerchantAccountKind }
  | { owner: "system"; kind: SystemAccountKind };

export interface PostingLine {
  account: AccountRef;
  amount: bigint;
}

export interface Posting {
  /** `custody`: between system accounts only, no transaction (frozen own addresses, issue #40). */
  kind: "deposit" | "hold" | "release" | "settle" | "custody";
  /** Idempotency: one posting per business key, ever. */
  businessKey: string;
  lines: PostingLine[];
}

const merchant = (kind: MerchantAccountKind): AccountRef => ({ owner: "merchant", kind });
const system = (kind: SystemAccountKind): AccountRef => ({ owner: "system", kind });

export class UnbalancedPostingError extends Error {}

/** Refuses anything but a balanced posting of non-zero lines on distinct accounts. */
export function assertBalanced(posting: Posting): void {
  if (posting.lines.length < 2)
    throw new UnbalancedPostingError(`${posting.businessKey}: fewer than two lines`);
  let sum = 0n;
  const seen = new Set<string>();
  for (const line of posting.lines) {
    if (line.amount === 0n) throw new UnbalancedPostingError(`${posting.businessKey}: zero line`);
    const key = `${line.account.owner}:${line.account.kind}`;
    if (seen.has(key)) throw new UnbalancedPostingError(`${posting.businessKey}: account ${key} twice`);
    seen.add(key);
    sum += line.amount;
  }
  if (sum !== 0n) throw new UnbalancedPostingError(`${posting.businessKey}: lines sum to ${sum}`);
}

function positive(name: string, v: bigint): void {
  if (v <= 0n) throw new RangeError(`${name} must be positive`);
}

/** Funds received on-chain for a deposit transaction: the merchant gets `received - fee`, the fee account `fee`. */
export function depositPosting(transactionId: string, received: bigint, fee: bigint): Posting {
  positive("received", received);
  if (fee < 0n || fee > received) throw new RangeError("fee must be within 0..received");
  const lines: PostingLine[] = [{ account: system("chain_incoming"), amount: -received }];
  if (received - fee > 0n) lines.push({ account: merchant("available"), amount: received - fee });
  if (fee > 0n) lines.push({ account: system("fees"), amount: fee });
  return { kind: "deposit", businessKey: `deposit:${transactionId}`, lines };
}

/**
 * A deposit from a frozen or refused sender (issue #40): what arrived is the merchant's but not
 * theirs to use, so it goes to `held`, not `available`. No fee yet: the fee is charged when it is
 * released (`releasedDepositPosting`, under the deposit's own `deposit:` key, so `ledger verify`
 * checks a released deposit like any other).
 */
export function heldDepositPosting(transactionId: string, received: bigint): Posting {
  positive("received", received);
  return {
    kind: "deposit",
    businessKey: `deposit-held:${transactionId}`,
    lines: [
      { account: system("chain_incoming"), amount: -received },
      { account: merchant("held"), amount: received },
    ],
  };
}

/** A held deposit released: out of `held`, `received - fee` to available, `fee` to the fee account. */
export function releasedDepositPosting(transactionId: string, received: bigint, fee: bigint): Posting {
  positive("received", received);
  if (fee < 0n || fee > received) throw new RangeError("fee must be within 0..received");
  const lines: PostingLine[] = [{ account: merchant("held"), amount: -received }];
  if (received - fee > 0n) lines.push({ account: merchant("available"), amount: received - fee });
  if (fee > 0n) lines.push({ account: system("fees"), amount: fee });
  // Kind `release`: it takes from a merchant account (under its lock), which a `deposit` never does.
  return { kind: "release", businessKey: `deposit:${transactionId}`, lines };
}

/** A held deposit sent back to its sender: out of `held`, on-chain out (its own key: once). */
export function returnedDepositPosting(transactionId: string, received: bigint): Posting {
  positive("received", received);
  return {
    kind: "settle",
    businessKey: `deposit-return:${transactionId}`,
    lines: [
      { account: merchant("held"), amount: -received },
      { account: system("chain_outgoing"), amount: received },
    ],
  };
}

/** Moves `amount` from available to held for a withdrawal or payout. */
export function holdPosting(transactionId: string, amount: bigint): Posting {
  positive("amount", amount);
  return {
    kind: "hold",
    businessKey: `hold:${transactionId}`,
    lines: [
      { account: merchant("available"), amount: -amount },
      { account: merchant("held"), amount },
    ],
  };
}

/**
 * Closing a hold: released back to available (rejected / failed) or settled (completed). Both use
 * the same business key, so a hold is closed exactly once, one way or the other.
 */
export function holdCloseKey(transactionId: string): string {
  return `hold-close:${transactionId}`;
}

export function releasePosting(transactionId: string, amount: bigint): Posting {
  positive("amount", amount);
  return {
    kind: "release",
    businessKey: holdCloseKey(transactionId),
    lines: [
      { account: merchant("held"), amount: -amount },
      { account: merchant("available"), amount },
    ],
  };
}

/** Completed: the held amount leaves; `amount - fee` went out on-chain, `fee` to the fee account. */
export function settlePosting(transactionId: string, amount: bigint, fee: bigint): Posting {
  positive("amount", amount);
  if (fee < 0n || fee >= amount) throw new RangeError("fee must be within 0..amount-1");
  const lines: PostingLine[] = [
    { account: merchant("held"), amount: -amount },
    { account: system("chain_outgoing"), amount: amount - fee },
  ];
  if (fee > 0n) lines.push({ account: system("fees"), amount: fee });
  return { kind: "settle", businessKey: holdCloseKey(transactionId), lines };
}

/**
 * The custody postings of an own address the token's issuer froze (issue #40, decisions/frozen-funds
 * 13). While it is frozen the ledger keeps `frozen` equal to the coins on it: `freezeCustody` moves
 * `amount` out of the usable custody (found frozen, or more arrived while frozen), `writeOffFrozen`
 * books what the issuer destroyed there as a loss, `unfreezeCustody` moves what is still frozen
 * back when the issuer lifts the freeze. Merchants' balances are untouched: they are still owed.
 * `businessKey`: one per adjustment of one address (the caller numbers them).
 */
export function freezeCustody(businessKey: string, amount: bigint): Posting {
  positive("amount", amount);
  return custody(businessKey, [
    { account: system("frozen"), amount: -amount },
    { account: system("chain_incoming"), amount },
  ]);
}

export function unfreezeCustody(businessKey: string, amount: bigint): Posting {
  positive("amount", amount);
  return custody(businessKey, [
    { account: system("frozen"), amount },
    { account: system("chain_incoming"), amount: -amount },
  ]);
}

export function writeOffFrozen(businessKey: string, amount: bigint): Posting {
  positive("amount", amount);
  return custody(businessKey, [
    { account: system("frozen"), amount },
    { account: system("written_off"), amount: -amount },
  ]);
}

function custody(businessKey: string, lines: PostingLine[]): Posting {
  return { kind: "custody", businessKey, lines };
}
