import type { ExpressionBuilder, Selectable } from "kysely";
import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import type { DB } from "../db/schema.js";
import type { PaymentLinksTable } from "../db/tables/links.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { ListParams } from "../domain/list.js";
import { formatUnits, UNIT } from "../domain/money.js";
import type { LinkPrice, NewPaymentLink, PaymentLinkRecord } from "../domain/payment-link.js";

/** The SQL of `payment_links` (migration 0039): this folder owns the table (src/db/table-owners.json). */

type Scope = { merchantId: string; environment: Environment };
type Row = Selectable<PaymentLinksTable>;

function priceOf(r: Row): LinkPrice {
  if (r.amount !== null) return { kind: "fixed", amount: BigInt(r.amount) };
  if (r.price_amount !== null && r.price_currency !== null)
    return { kind: "fiat", priceAmount: unitsOf(r.price_amount), priceCurrency: r.price_currency };
  return {
    kind: "open",
    minAmount: r.min_amount === null ? null : BigInt(r.min_amount),
    maxAmount: r.max_amount === null ? null : BigInt(r.max_amount),
  };
}

/** numeric(38,6) text ("19.990000") in 10^-6 units. */
function unitsOf(text: string): bigint {
  const [whole = "0", frac = ""] = text.split(".");
  return BigInt(whole) * UNIT + BigInt(frac.padEnd(6, "0").slice(0, 6));
}

function toRecord(r: Row): PaymentLinkRecord {
  return {
    id: r.id,
    merchantId: r.merchant_id,
    environment: r.environment,
    title: r.title,
    description: r.description,
    price: priceOf(r),
    currencyTypes: r.currency_types as CurrencyType[],
    orderIdPrefix: r.order_id_prefix,
    metadata: r.metadata,
    maxPayments: r.max_payments,
    expiresAt: r.expires_at,
    successUrl: r.success_url,
    active: r.active,
    sessionsOpened: r.sessions_opened,
    deactivatedAt: r.deactivated_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function insertPaymentLink(
  db: Db,
  scope: Scope,
  id: string,
  link: NewPaymentLink,
  now: Date,
): Promise<PaymentLinkRecord> {
  const p = link.price;
  const row = await db
    .insertInto("payment_links")
    .values({
      id,
      merchant_id: scope.merchantId,
      environment: scope.environment,
      title: link.title,
      description: link.description,
      amount: p.kind === "fixed" ? p.amount : null,
      price_amount: p.kind === "fiat" ? formatUnits(p.priceAmount) : null,
      price_currency: p.kind === "fiat" ? p.priceCurrency : null,
      min_amount: p.kind === "open" ? p.minAmount : null,
      max_amount: p.kind === "open" ? p.maxAmount : null,
      currency_types: link.currencyTypes,
      order_id_prefix: link.orderIdPrefix,
      metadata: link.metadata === null ? null : JSON.stringify(link.metadata),
      max_payments: link.maxPayments,
      expires_at: link.expiresAt,
      success_url: link.successUrl,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRecord(row);
}

/** A merchant's link in an environment (null: none, or another merchant's). */
export async function findPaymentLink(db: Db, scope: Scope, id: string): Promise<PaymentLinkRecord | null> {
  const row = await db
    .selectFrom("payment_links")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment)
    .executeTakeFirst();
  return row ? toRecord(row) : null;
}

/**
 * Only a merchant in good standing takes payments through its links: a suspended merchant's link is
 * not found by the payer (outside review of issue #41: its shared links kept opening sessions while
 * every credential of the merchant was refused).
 */
const activeMerchant = (eb: ExpressionBuilder<DB, "payment_links">) =>
  eb.exists(
    eb
      .selectFrom("merchants")
      .select("merchants.id")
      .whereRef("merchants.id", "=", "payment_links.merchant_id")
      .where("merchants.status", "=", "active"),
  );

/** The link behind a public page: any merchant's, in the environment of the base URL asked. */
export async function findPublicPaymentLink(
  db: Db,
  environment: Environment,
  id: string,
): Promise<PaymentLinkRecord | null> {
  const row = await db
    .selectFrom("payment_links")
    .selectAll()
    .where("id", "=", id)
    .where("environment", "=", environment)
    .where(activeMerchant)
    .executeTakeFirst();
  return row ? toRecord(row) : null;
}

/**
 * The link under its row lock (`select … for update`, in the caller's transaction): the sessions
 * opened from one link are counted and created one after another (links/open.ts).
 */
export async function lockPublicPaymentLink(
  trx: Db,
  environment: Environment,
  id: string,
): Promise<PaymentLinkRecord | null> {
  const row = await trx
    .selectFrom("payment_links")
    .selectAll()
    .where("id", "=", id)
    .where("environment", "=", environment)
    .where(activeMerchant)
    .forUpdate()
    .executeTakeFirst();
  return row ? toRecord(row) : null;
}

/** Counts one more session opened from the (locked) link; returns its number (1, 2, …). */
export async function countSessionOpened(trx: Db, id: string): Promise<number> {
  const row = await trx
    .updateTable("payment_links")
    .set((eb) => ({ sessions_opened: eb("sessions_opened", "+", 1) }))
    .where("id", "=", id)
    .returning("sessions_opened")
    .executeTakeFirstOrThrow();
  return row.sessions_opened;
}

/** Deactivates a merchant's link (idempotent: an inactive link stays as it is); null when not found. */
export async function deactivatePaymentLink(
  db: Db,
  scope: Scope,
  id: string,
  now: Date,
): Promise<PaymentLinkRecord | null> {
  const row = await db
    .updateTable("payment_links")
    .set({ active: false, deactivated_at: now, updated_at: now })
    .where("id", "=", id)
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment)
    .where("active", "=", true)
    .returningAll()
    .executeTakeFirst();
  if (row) return toRecord(row);
  return findPaymentLink(db, scope, id);
}

const SORT_COLUMNS = { createdAt: "created_at", updatedAt: "updated_at", amount: "amount" } as const;

/** A page of a merchant's links in an environment (`amount`, `createdAt`, `updatedAt`; else `createdAt`). */
export async function listPaymentLinks(
  db: Db,
  scope: Scope,
  filter: { active?: boolean | undefined },
  page: ListParams,
): Promise<{ rows: PaymentLinkRecord[]; total: number }> {
  let q = db
    .selectFrom("payment_links")
    .where("merchant_id", "=", scope.merchantId)
    .where("environment", "=", scope.environment);
  if (filter.active !== undefined) q = q.where("active", "=", filter.active);
  const column = SORT_COLUMNS[page.sortBy as keyof typeof SORT_COLUMNS] ?? "created_at";
  const { rows, total } = await paginate(q, page, (x) =>
    x.selectAll().orderBy(column, page.order).orderBy("id", page.order),
  );
  return { rows: rows.map(toRecord), total };
}
