import { sql } from "kysely";
import { compiledByShape } from "../db/compiled.js";
import type { Db } from "../db/database.js";
import { PREPARED } from "../db/prepared.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { assertBalanced, type MerchantAccountKind, type Posting } from "../domain/ledger.js";

export interface PostingContext {
  merchantId: string;
  environment: Environment;
  currencyType: CurrencyType;
  transactionId: string;
}

/** A custody posting's (system accounts only): no merchant, no transaction. */
export interface CustodyContext {
  environment: Environment;
  currencyType: CurrencyType;
}

export type PostResult =
  | { status: "posted"; postingId: string }
  | { status: "already_posted"; postingId: string }
  | { status: "insufficient_balance"; account: MerchantAccountKind; balance: bigint; needed: bigint };

/**
 * Test seam: lets the crash test kill the process inside a posting transaction, after the posting's
 * statement (balances and journal written, not committed). Before the posting became one statement
 * it ran between the balance update and the journal insert; either way nothing may stand after the kill.
 */
export interface PostHooks {
  afterBalances?: () => Promise<void>;
}

/**
 * A concurrent transaction posted the same business key first; the caller's transaction must roll
 * back. An internal fault, not an answer: it is not an `AppError`, so a request that meets it gets
 * the bare 500 `INTERNAL_ERROR` (the key stays in the log, never in the body).
 */
export class ConcurrentPostingError extends Error {
  constructor(readonly businessKey: string) {
    super(`posting ${businessKey} was written concurrently`);
    this.name = "ConcurrentPostingError";
  }
}

/** One row of `ledger_post(...)` (`migrations/functions/ledger_post.sql`). */
interface PostRow {
  r_status: "posted" | "already_posted" | "closed_otherwise" | "insufficient_balance" | "concurrent";
  r_posting_id: string | null;
  r_kind: string | null;
  r_balance: string | null;
  r_needed: string | null;
}

/**
 * `ledger_post(...)`, built once (`compiledByShape`): fixed text, the lines as two array parameters,
 * so on PostgreSQL it is also a named prepared statement (`PREPARED`).
 */
const postStatement = compiledByShape(
  (
    db: Db,
    r: {
      p: {
        key: string;
        kind: string;
        environment: string;
        currencyType: string;
        merchantId: string;
        transactionId: string | null;
        accounts: string[];
        amounts: string[];
      };
    },
  ) => {
    const q = sql<PostRow>`select r_status, r_posting_id, r_kind, r_balance, r_needed
      from ledger_post(${r.p.key}, ${r.p.kind}, ${r.p.environment}, ${r.p.currencyType}, ${r.p.merchantId},
        ${r.p.transactionId}, ${r.p.accounts}::text[], ${r.p.amounts}::numeric[]) ${PREPARED}`;
    return { compile: () => q.compile(db) };
  },
);

/**
 * Applies a posting inside the caller's transaction (with its status change and webhook event), in
 * ONE statement: the database function `ledger_post` (`migrations/functions/ledger_post.sql` and
 * `ledger_post_unchecked.sql`; their history: migrations 0016, 0022, 0023, 0025).
 *  - A deposit takes no lock: it writes the posting and its entries (a replay of its key answers
 *    `already_posted`, after waiting for a transaction in flight that wrote the same key), and the
 *    commit-time check raises the merchant's running balance at COMMIT. Until then the caller's
 *    own transaction does not see the new balance.
 *  - A hold, a settle or a release, in this order: locks the merchant accounts it touches, in id
 *    order (no deadlocks between postings), creating them on the merchant's first movement in this
 *    currency; idempotency (`already_posted` for the same kind, INVALID_STATE when a hold was
 *    already closed the other way); refuses (as a value, nothing written) a merchant account that
 *    would go negative; writes the posting, the balances and the entries.
 * Why one statement: the steps were ~6 round trips, all made while holding the merchant's row
 * locks, so a busy account's postings queued behind each other's network waits (issue 23).
 * The database checks the rest even if this code had a bug: non-negative balances (CHECK), a
 * balanced posting whose entries name existing accounts (deferred constraint trigger), an
 * append-only journal (triggers). And it is the only way into the ledger (migration 0025): no app
 * database role may write the ledger tables; `ledger_post` runs as the owner, and for the api's
 * role makes only a hold of one of its withdrawals or payouts (exactly its amount) and the release
 * of a rejected withdrawal's hold (a refusal is SQLSTATE 42501, an error, never a value).
 */
export async function postLedger(
  trx: Db,
  ctx: PostingContext | CustodyContext,
  posting: Posting,
  hooks: PostHooks = {},
): Promise<PostResult> {
  assertBalanced(posting);
  const custody = !("merchantId" in ctx);
  if (custody !== (posting.kind === "custody"))
    throw new Error(`${posting.businessKey}: a custody posting, and only one, is posted without a merchant`);
  const { rows } = await postStatement(trx, {
    p: {
      key: posting.businessKey,
      kind: posting.kind,
      environment: ctx.environment,
      currencyType: ctx.currencyType,
      // `system` names no merchant account: a custody posting touches none (ledger_post refuses it).
      merchantId: custody ? "system" : ctx.merchantId,
      transactionId: custody ? null : ctx.transactionId,
      accounts: posting.lines.map((l) => l.account.kind),
      amounts: posting.lines.map((l) => l.amount.toString()),
    },
  });
  const row = rows[0];
  if (!row) throw new Error(`ledger_post ${posting.businessKey} returned no row`);
  switch (row.r_status) {
    case "posted":
      // Test seam: the posting is written but not committed (the crash test kills the process here).
      await hooks.afterBalances?.();
      return { status: "posted", postingId: String(row.r_posting_id) };
    case "already_posted":
      return { status: "already_posted", postingId: String(row.r_posting_id) };
    case "closed_otherwise":
      throw new AppError("INVALID_STATE", `This transaction's hold was already closed (${row.r_kind}).`);
    case "insufficient_balance":
      return {
        status: "insufficient_balance",
        account: row.r_kind as MerchantAccountKind,
        balance: BigInt(row.r_balance ?? "0"),
        needed: BigInt(row.r_needed ?? "0"),
      };
    case "concurrent":
      throw new ConcurrentPostingError(posting.businessKey);
  }
  throw new Error(`ledger_post ${posting.businessKey}: unknown answer ${String(row.r_status)}`);
}
