import type { Db } from "../db/database.js";
import type { TransactionRow } from "../db/tables/ledger.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { TransactionRecord, TransactionStatus, TransactionType } from "../domain/transaction.js";

/** The columns a `TransactionRecord` is made of (an explicit list for prepared statements' results). */
export const TRANSACTION_RECORD_COLUMNS = [
  "id",
  "merchant_id",
  "environment",
  "type",
  "status",
  "currency_type",
  "amount",
  "fee",
  "net_amount",
  "actual_balance",
  "wallet_address",
  "blockchain_tx_hash",
  "order_id",
  "reference",
  "external_user_id",
  "checkout_session_id",
  "rejection_reason",
  "wrong_network",
  "hold_reason",
  "payment_link_id",
  "created_at",
  "updated_at",
  "confirmed_at",
] as const;

export function toRecord(
  r: Pick<TransactionRow, (typeof TRANSACTION_RECORD_COLUMNS)[number]>,
): TransactionRecord {
  return {
    id: r.id,
    merchantId: r.merchant_id,
    environment: r.environment,
    type: r.type,
    status: r.status as TransactionStatus,
    currencyType: r.currency_type as CurrencyType,
    amount: BigInt(r.amount),
    fee: BigInt(r.fee),
    netAmount: BigInt(r.net_amount),
    actualBalance: r.actual_balance === null ? null : BigInt(r.actual_balance),
    walletAddress: r.wallet_address,
    blockchainTxHash: r.blockchain_tx_hash,
    orderId: r.order_id,
    reference: r.reference,
    externalUserId: r.external_user_id,
    checkoutSessionId: r.checkout_session_id,
    rejectionReason: r.rejection_reason,
    wrongNetwork: r.wrong_network,
    holdReason: r.hold_reason,
    paymentLinkId: r.payment_link_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    confirmedAt: r.confirmed_at,
  };
}

export interface NewTransaction {
  id: string;
  merchantId: string;
  environment: Environment;
  type: TransactionType;
  status: TransactionStatus;
  currencyType: CurrencyType;
  amount: bigint;
  fee: bigint;
  walletAddress?: string | null;
  orderId?: string | null;
  reference?: string | null;
  externalUserId?: string | null;
  checkoutSessionId?: string | null;
  actualBalance?: bigint | null;
  metadata?: Record<string, unknown> | null;
  blockchainTxHash?: string | null;
  confirmedAt?: Date | null;
  /** A deposit made of exactly one on-chain transfer (unique: a transfer is one deposit at most). */
  chainObservationId?: string | null;
  depositWalletId?: string | null;
  /** A deposit that arrived as another currency type than its address was made for. */
  wrongNetwork?: boolean;
  /** Why a deposit is `held` (frozen or refused sender). */
  holdReason?: string | null;
  /** The payment link that opened the session of this deposit (issue #41). */
  paymentLinkId?: string | null;
  /** Defaults to the database's now(); flows pass their clock's time. */
  createdAt?: Date;
}

/** The row of a new transaction (for callers that insert it within a larger statement). */
export function transactionValues(t: NewTransaction) {
  return {
    id: t.id,
    merchant_id: t.merchantId,
    environment: t.environment,
    type: t.type,
    status: t.status,
    currency_type: t.currencyType,
    amount: t.amount.toString(),
    fee: t.fee.toString(),
    net_amount: (t.amount - t.fee).toString(),
    actual_balance:
      t.actualBalance === undefined || t.actualBalance === null ? null : t.actualBalance.toString(),
    wallet_address: t.walletAddress ?? null,
    blockchain_tx_hash: t.blockchainTxHash ?? null,
    confirmed_at: t.confirmedAt ?? null,
    chain_observation_id: t.chainObservationId ?? null,
    deposit_wallet_id: t.depositWalletId ?? null,
    ...(t.createdAt ? { created_at: t.createdAt, updated_at: t.createdAt } : {}),
    order_id: t.orderId ?? null,
    reference: t.reference ?? null,
    external_user_id: t.externalUserId ?? null,
    checkout_session_id: t.checkoutSessionId ?? null,
    rejection_reason: null,
    metadata: t.metadata ? JSON.stringify(t.metadata) : null,
    ...(t.wrongNetwork ? { wrong_network: true } : {}),
    ...(t.holdReason ? { hold_reason: t.holdReason } : {}),
    ...(t.paymentLinkId ? { payment_link_id: t.paymentLinkId } : {}),
  };
}

export async function insertTransaction(db: Db, t: NewTransaction): Promise<TransactionRecord> {
  const row = await db
    .insertInto("transactions")
    .values(transactionValues(t))
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRecord(row);
}

/** Sets the status and the given fields of a transaction (and `updated_at`); returns the new record. */
export async function updateTransaction(
  trx: Db,
  id: string,
  change: {
    status?: TransactionStatus;
    actualBalance?: bigint;
    fee?: bigint;
    netAmount?: bigint;
    blockchainTxHash?: string | null;
    confirmedAt?: Date | null;
    rejectionReason?: string | null;
    updatedAt: Date;
  },
): Promise<TransactionRecord> {
  const row = await trx
    .updateTable("transactions")
    .set({
      ...(change.status !== undefined ? { status: change.status } : {}),
      ...(change.actualBalance !== undefined ? { actual_balance: change.actualBalance.toString() } : {}),
      ...(change.fee !== undefined ? { fee: change.fee.toString() } : {}),
      ...(change.netAmount !== undefined ? { net_amount: change.netAmount.toString() } : {}),
      ...(change.blockchainTxHash !== undefined ? { blockchain_tx_hash: change.blockchainTxHash } : {}),
      ...(change.confirmedAt !== undefined ? { confirmed_at: change.confirmedAt } : {}),
      ...(change.rejectionReason !== undefined ? { rejection_reason: change.rejectionReason } : {}),
      updated_at: change.updatedAt,
    })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRecord(row);
}

/** Locks one transaction row (`for update`) and reads it; the serialisation point of its status changes. */
export async function lockTransaction(trx: Db, id: string): Promise<TransactionRecord | undefined> {
  const row = await trx
    .selectFrom("transactions")
    .selectAll()
    .where("id", "=", id)
    .forUpdate()
    .executeTakeFirst();
  return row ? toRecord(row) : undefined;
}

/** One transaction of a merchant in an environment; another merchant's or environment's id is "not found". */
export async function findTransaction(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  id: string,
): Promise<TransactionRecord | undefined> {
  const row = await db
    .selectFrom("transactions")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment)
    .executeTakeFirst();
  return row ? toRecord(row) : undefined;
}

/** The use case behind `GET …/transactions/{id}`: one transaction of the merchant, else 404 NOT_FOUND. */
export async function getTransaction(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  id: string,
): Promise<TransactionRecord> {
  const t = await findTransaction(db, scope, id);
  if (!t) throw AppError.notFound("No such transaction.");
  return t;
}
