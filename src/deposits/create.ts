import type { Insertable } from "kysely";
import { compiledByShape } from "../db/compiled.js";
import type { Db } from "../db/database.js";
import { PREPARED } from "../db/prepared.js";
import type { WatchedAddressesTable } from "../db/tables/chains.js";
import type { CheckoutSessionsTable } from "../db/tables/deposits.js";
import type { TransactionsTable } from "../db/tables/ledger.js";
import type { CheckoutSessionRecord, SessionPrice } from "../domain/checkout.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { formatRate } from "../domain/exchange-rate.js";
import { depositFee, type FeeSchedule } from "../domain/fees.js";
import { newId } from "../domain/ids.js";
import type { TransactionRecord } from "../domain/transaction.js";
import { Coalescer } from "../lib/coalescer.js";
import { insertTransactionRows, toRecord, transactionValues } from "../transactions/index.js";
import {
  type AddressDeriver,
  allocateDepositAddress,
  type DepositIndexReserve,
  nextDepositIndex,
  watchedAddressRows,
} from "../wallet/index.js";
import { insertWatchedAddressRows } from "../watcher/index.js";

/**
 * What creating deposits needs: the watch-only deriver, the process's reserve of HD indexes, fees,
 * and how long late payments are watched.
 */
export interface CreateDepositDeps {
  deriver: AddressDeriver;
  indexes: DepositIndexReserve;
  fees: FeeSchedule;
  latePaymentWatchHours: number;
  /** The process's coalesced session inserts (used outside transactions; absent: one statement each). */
  inserts?: CheckoutSessionInserts;
  /** The currency types an address of `network` is also watched on (wrong network); absent: none. */
  twinsOf?: (network: CurrencyType) => readonly CurrencyType[];
}

export interface NewCheckoutSession {
  amount: bigint;
  currencyType: CurrencyType;
  lifetimeMs: number;
  callbackUrl: string | null;
  orderId: string | null;
  metadata: Record<string, unknown> | null;
  /** The price in fiat and its locked rate (`amount` is its conversion); null: priced in the token. */
  price?: SessionPrice | null;
  successUrl?: string | null;
  cancelUrl?: string | null;
  /** The payment link the session was opened from (issue #41), on its deposit transaction. */
  paymentLinkId?: string | null;
}

/** The three rows of one new session. */
interface SessionRows {
  /** The address's own row and its wrong-network twins'. */
  w: Insertable<WatchedAddressesTable>[];
  s: Insertable<CheckoutSessionsTable>;
  t: Insertable<TransactionsTable>;
}

/**
 * The watched addresses, the deposit transactions and the session rows of one or more sessions in
 * ONE statement (data-modifying CTEs; the foreign keys are checked at its end; the watched
 * addresses' and the transactions' inserts are their owners' fragments, watcher/ and
 * transactions/, composed here): one round trip
 * instead of three, prepared once per connection and row count (its planning was a third of
 * PostgreSQL's work per session) and built once per process and row count.
 */
const insertSessionRows = compiledByShape(
  (
    db: Db,
    r: {
      w: Insertable<WatchedAddressesTable>[];
      s: Insertable<CheckoutSessionsTable>[];
      t: Insertable<TransactionsTable>[];
    },
  ) =>
    insertTransactionRows(
      db
        .with("w", (d) => insertWatchedAddressRows(d, r.w))
        .with("s", (d) => d.insertInto("checkout_sessions").values(r.s)),
      r.t,
    ).modifyEnd(PREPARED),
);

async function insertSessions(db: Db, sessions: SessionRows[]): Promise<TransactionRecord[]> {
  const { rows } = await insertSessionRows(db, {
    w: sessions.flatMap((x) => x.w),
    s: sessions.map((x) => x.s),
    t: sessions.map((x) => x.t),
  });
  const byId = new Map(rows.map((row) => [row.id, row]));
  return sessions.map(({ t }) => {
    const row = byId.get(t.id);
    if (!row) throw new Error(`the checkout session insert returned no row for ${t.id}`);
    return toRecord(row);
  });
}

/**
 * Session inserts of one process outside transactions, coalesced: sessions created while an
 * insert is in flight are written together by the next statement (up to 16; one commit, one round
 * trip; a second statement runs beside the first only for a full 16). A failed statement wrote
 * nothing (it is atomic); its sessions are then written one by one, so one bad row fails only its
 * own request.
 */
export class CheckoutSessionInserts {
  readonly #batches: Coalescer<SessionRows, TransactionRecord>;

  constructor(db: Db, options: { maxInFlight?: number } = {}) {
    this.#batches = new Coalescer((sessions) => insertSessions(db, sessions), {
      maxBatch: 16,
      maxInFlight: options.maxInFlight ?? 2,
      splitOnError: true,
    });
  }

  insert(rows: SessionRows): Promise<TransactionRecord> {
    return this.#batches.submit(rows);
  }
}

/**
 * Creates a session in the caller's transaction: its deposit transaction (`pending`), a fresh
 * derived address watched until `expiresAt` plus the late-payment window, and the session row.
 */
export async function createCheckoutSession(
  trx: Db,
  deps: CreateDepositDeps,
  scope: { merchantId: string; environment: Environment },
  input: NewCheckoutSession,
  now: Date,
): Promise<CheckoutSessionRecord> {
  const id = newId("tx");
  const expiresAt = new Date(now.getTime() + input.lifetimeMs);
  const index = await nextDepositIndex(trx, input.currencyType, scope.environment, deps.indexes);
  const address = deps.deriver.address(input.currencyType, scope.environment, index);
  const watched = watchedAddressRows(
    {
      network: input.currencyType,
      environment: scope.environment,
      merchantId: scope.merchantId,
      purpose: "checkout",
      watchUntil: new Date(expiresAt.getTime() + deps.latePaymentWatchHours * 3_600_000),
      referenceId: id,
      twins: deps.twinsOf?.(input.currencyType) ?? [],
    },
    index,
    address,
  );
  const rows: SessionRows = {
    w: watched,
    s: {
      id,
      merchant_id: scope.merchantId,
      environment: scope.environment,
      network: input.currencyType,
      address,
      expires_at: expiresAt,
      callback_url: input.callbackUrl,
      ...priceColumns(input.price ?? null),
      success_url: input.successUrl ?? null,
      cancel_url: input.cancelUrl ?? null,
    },
    t: transactionValues({
      id,
      merchantId: scope.merchantId,
      environment: scope.environment,
      type: "deposit",
      status: "pending",
      currencyType: input.currencyType,
      amount: input.amount,
      fee: depositFee(deps.fees, input.currencyType, input.amount),
      walletAddress: address,
      orderId: input.orderId,
      metadata: input.metadata,
      createdAt: now,
      paymentLinkId: input.paymentLinkId ?? null,
    }),
  };
  // Outside a transaction the insert may share a statement with concurrent sessions' inserts.
  const transaction =
    deps.inserts && !trx.isTransaction
      ? await deps.inserts.insert(rows)
      : ((await insertSessions(trx, [rows]))[0] as TransactionRecord);
  return {
    transaction,
    network: input.currencyType,
    address,
    expiresAt,
    callbackUrl: input.callbackUrl,
    metadata: input.metadata,
    closedAt: null,
    price: input.price ?? null,
    successUrl: input.successUrl ?? null,
    cancelUrl: input.cancelUrl ?? null,
  };
}

/** A session's price columns (migration 0037): all null for a session priced in the token. */
function priceColumns(price: SessionPrice | null) {
  return {
    price_amount: price ? price.amount.toString() : null,
    price_currency: price?.currency ?? null,
    exchange_rate: price ? formatRate(price.rate) : null,
    rate_source: price?.source ?? null,
    rate_at: price?.at ?? null,
  };
}

export interface DepositWallet {
  id: string;
  address: string;
  currencyType: CurrencyType;
  network: CurrencyType;
  label: string | null;
  externalUserId: string | null;
  createdAt: Date;
}

/** `/wallet/generate`: a permanent address (watched for good); each payment to it is its own deposit. */
export async function generateDepositWallet(
  trx: Db,
  deps: CreateDepositDeps,
  scope: { merchantId: string; environment: Environment },
  input: { currencyType: CurrencyType; label: string | null; externalUserId: string | null },
  now: Date,
): Promise<DepositWallet> {
  const id = newId("wal");
  const { address } = await allocateDepositAddress(trx, {
    deriver: deps.deriver,
    indexes: deps.indexes,
    network: input.currencyType,
    environment: scope.environment,
    merchantId: scope.merchantId,
    purpose: "wallet",
    watchUntil: null,
    referenceId: id,
    twins: deps.twinsOf?.(input.currencyType) ?? [],
  });
  await trx
    .insertInto("deposit_wallets")
    .values({
      id,
      merchant_id: scope.merchantId,
      environment: scope.environment,
      network: input.currencyType,
      address,
      label: input.label,
      external_user_id: input.externalUserId,
      created_at: now,
    })
    .execute();
  return {
    id,
    address,
    currencyType: input.currencyType,
    network: input.currencyType,
    label: input.label,
    externalUserId: input.externalUserId,
    createdAt: now,
  };
}
