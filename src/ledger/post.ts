import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import {
  assertBalanced,
  type MerchantAccountKind,
  type Posting,
  type SystemAccountKind,
} from "../domain/ledger.js";

export interface PostingContext {
  merchantId: string;
  environment: Environment;
  currencyType: CurrencyType;
  transactionId: string;
}

export type PostResult =
  | { status: "posted"; postingId: string }
  | { status: "already_posted"; postingId: string }
  | { status: "insufficient_balance"; account: MerchantAccountKind; balance: bigint; needed: bigint };

/** Test seam: lets the crash test kill the process between the balance update and the journal insert. */
export interface PostHooks {
  afterBalances?: () => Promise<void>;
}

/** A concurrent transaction posted the same business key first; the caller's transaction must roll back. */
export class ConcurrentPostingError extends AppError {
  constructor(key: string) {
    super("INTERNAL_ERROR", `posting ${key} was written concurrently`, {}, true);
  }
}

/**
 * Applies a posting inside the caller's transaction (with its status change and webhook event):
 *  1. lock the merchant accounts it touches, in id order (no deadlocks between postings);
 *  2. idempotency: a posting with the same business key returns `already_posted` (same kind) or
 *     fails with INVALID_STATE (a hold already closed the other way);
 *  3. refuse (as a value, nothing written) if a merchant account would go negative;
 *  4. update the running balances, write the posting and its entries.
 * The database checks the rest even if this code had a bug: non-negative balances (CHECK), a
 * balanced posting (deferred constraint trigger), an append-only journal (triggers).
 */
export async function postLedger(
  trx: Db,
  ctx: PostingContext,
  posting: Posting,
  hooks: PostHooks = {},
): Promise<PostResult> {
  assertBalanced(posting);
  const merchantLines = posting.lines.filter((l) => l.account.owner === "merchant");
  const accounts = await lockMerchantAccounts(
    trx,
    ctx,
    merchantLines.map((l) => l.account.kind as MerchantAccountKind),
  );

  const existing = await trx
    .selectFrom("ledger_postings")
    .select(["id", "kind"])
    .where("business_key", "=", posting.businessKey)
    .executeTakeFirst();
  if (existing) {
    if (existing.kind === posting.kind) return { status: "already_posted", postingId: String(existing.id) };
    throw new AppError("INVALID_STATE", `This transaction's hold was already closed (${existing.kind}).`);
  }

  for (const line of merchantLines) {
    const account = accounts.get(line.account.kind as MerchantAccountKind);
    if (!account) throw new Error(`account ${line.account.kind} missing after lock`);
    if (account.balance + line.amount < 0n) {
      return {
        status: "insufficient_balance",
        account: line.account.kind as MerchantAccountKind,
        balance: account.balance,
        needed: -line.amount,
      };
    }
  }
  for (const line of merchantLines) {
    const account = accounts.get(line.account.kind as MerchantAccountKind);
    await trx
      .updateTable("ledger_accounts")
      .set({ balance: sql`balance + ${line.amount.toString()}::numeric` })
      .where("id", "=", account?.id as string)
      .execute();
  }
  await hooks.afterBalances?.();

  const inserted = await trx
    .insertInto("ledger_postings")
    .values({
      business_key: posting.businessKey,
      kind: posting.kind,
      environment: ctx.environment,
      transaction_id: ctx.transactionId,
    })
    .onConflict((oc) => oc.column("business_key").doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!inserted) throw new ConcurrentPostingError(posting.businessKey);

  const systemIds = await systemAccountIds(trx, ctx.environment, ctx.currencyType);
  await trx
    .insertInto("ledger_entries")
    .values(
      posting.lines.map((line) => ({
        posting_id: String(inserted.id),
        account_id:
          line.account.owner === "merchant"
            ? (accounts.get(line.account.kind)?.id as string)
            : (systemIds.get(line.account.kind) as string),
        amount: line.amount.toString(),
      })),
    )
    .execute();
  return { status: "posted", postingId: String(inserted.id) };
}

interface LockedAccount {
  id: string;
  balance: bigint;
}

async function lockMerchantAccounts(
  trx: Db,
  ctx: PostingContext,
  kinds: MerchantAccountKind[],
): Promise<Map<MerchantAccountKind, LockedAccount>> {
  const result = new Map<MerchantAccountKind, LockedAccount>();
  if (kinds.length === 0) return result;
  const select = () =>
    trx
      .selectFrom("ledger_accounts")
      .select(["id", "kind", "balance"])
      .where("owner", "=", ctx.merchantId)
      .where("environment", "=", ctx.environment)
      .where("currency_type", "=", ctx.currencyType)
      .where("kind", "in", kinds)
      .orderBy("id")
      .forUpdate()
      .execute();
  let rows = await select();
  if (rows.length < kinds.length) {
    // First movement of this merchant in this currency: create its accounts (both kinds, always
    // in the same order, so concurrent creators cannot deadlock), then lock.
    await trx
      .insertInto("ledger_accounts")
      .values(
        (["available", "held"] as const).map((kind) => ({
          owner: ctx.merchantId,
          environment: ctx.environment,
          currency_type: ctx.currencyType,
          kind,
          balance: "0",
        })),
      )
      .onConflict((oc) => oc.columns(["owner", "environment", "currency_type", "kind"]).doNothing())
      .execute();
    rows = await select();
  }
  for (const r of rows)
    result.set(r.kind as MerchantAccountKind, { id: String(r.id), balance: BigInt(r.balance ?? "0") });
  return result;
}

// System accounts are created by the migration and never change: cached per process.
const systemCache = new Map<string, Map<SystemAccountKind, string>>();

async function systemAccountIds(
  trx: Db,
  environment: Environment,
  currencyType: CurrencyType,
): Promise<Map<SystemAccountKind, string>> {
  const key = `${environment}:${currencyType}`;
  const cached = systemCache.get(key);
  if (cached) return cached;
  const rows = await trx
    .selectFrom("ledger_accounts")
    .select(["id", "kind"])
    .where("owner", "=", "system")
    .where("environment", "=", environment)
    .where("currency_type", "=", currencyType)
    .execute();
  const map = new Map(rows.map((r) => [r.kind as SystemAccountKind, String(r.id)]));
  if (map.size !== 3) throw new Error(`system accounts for ${key} are missing (migration 0002)`);
  systemCache.set(key, map);
  return map;
}
