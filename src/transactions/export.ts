import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import { formatRate, parseRate } from "../domain/exchange-rate.js";
import { formatUnits } from "../domain/money.js";
import type { TransactionRecord } from "../domain/transaction.js";
import { csvRow } from "../lib/csv.js";
import { merchantTransactions, type TransactionFilter } from "./list.js";
import { TRANSACTION_RECORD_COLUMNS, toRecord } from "./records.js";

/**
 * The accounting export (issue #21): a merchant's transactions in an environment as CSV, one row
 * per transaction, oldest first, the list's filters applied. Read in keyset pages of `pageSize`
 * rows — `(created_at, id)` after the last row of the page before, on the list's own index — so
 * memory stays one page whatever the row count, and no statement or connection is held between
 * pages (an export of millions of rows never pins a pool connection or a snapshot for minutes).
 * Each page is its own snapshot: a transaction that changes status while an export runs shows the
 * status its page saw; one created meanwhile is included if it sorts after the page being read.
 */

/**
 * The price in fiat of a deposit's checkout session (docs/decisions/prices.md), for the export's
 * price columns: read from `checkout_sessions` (deposits/ owns it; deposits/ sits above this folder,
 * so this is a named reader in src/db/table-owners.json), once per page.
 */
interface SessionPriceCells {
  priceAmount: string;
  priceCurrency: string;
  exchangeRate: string;
  rateSource: string;
  rateAt: string;
}

type Row = { t: TransactionRecord; price: SessionPriceCells | undefined };

/** Each column's cell of a transaction: the transaction object's fields (docs/api-reference.md#schema-transaction), amounts as exact decimals. */
const CELLS = {
  transactionId: ({ t }) => t.id,
  type: ({ t }) => t.type,
  status: ({ t }) => t.status,
  amount: ({ t }) => formatUnits(t.amount),
  fee: ({ t }) => formatUnits(t.fee),
  netAmount: ({ t }) => formatUnits(t.netAmount),
  actualBalance: ({ t }) => (t.actualBalance === null ? null : formatUnits(t.actualBalance)),
  currencyType: ({ t }) => t.currencyType,
  walletAddress: ({ t }) => t.walletAddress,
  blockchainTxHash: ({ t }) => t.blockchainTxHash,
  orderId: ({ t }) => t.orderId,
  reference: ({ t }) => t.reference,
  externalUserId: ({ t }) => t.externalUserId,
  checkoutSessionId: ({ t }) => t.checkoutSessionId,
  rejectionReason: ({ t }) => t.rejectionReason,
  createdAt: ({ t }) => t.createdAt.toISOString(),
  updatedAt: ({ t }) => t.updatedAt.toISOString(),
  confirmedAt: ({ t }) => (t.confirmedAt ? t.confirmedAt.toISOString() : null),
  // Last, so the earlier columns keep their positions (issue #37).
  wrongNetwork: ({ t }) => (t.wrongNetwork ? "true" : "false"),
  // The session's price in fiat and its locked rate (issue #41): empty without one.
  priceAmount: ({ price }) => price?.priceAmount ?? null,
  priceCurrency: ({ price }) => price?.priceCurrency ?? null,
  exchangeRate: ({ price }) => price?.exchangeRate ?? null,
  rateSource: ({ price }) => price?.rateSource ?? null,
  rateAt: ({ price }) => price?.rateAt ?? null,
} satisfies Record<string, (row: Row) => string | null>;

/** The header, in the order of the cells. */
export const EXPORT_COLUMNS = Object.keys(CELLS) as (keyof typeof CELLS)[];
const CELL_FNS = Object.values(CELLS);

export const EXPORT_PAGE_SIZE = 1_000;

/**
 * The CSV text, a chunk per page: the header first, then each page's rows. Pull-driven: the next
 * page is read only when the consumer asks for it (a slow download holds no rows in memory).
 */
export async function* exportTransactionsCsv(
  db: Db,
  scope: { merchantId: string; environment: Environment },
  filter: TransactionFilter,
  pageSize = EXPORT_PAGE_SIZE,
): AsyncGenerator<string> {
  yield csvRow(EXPORT_COLUMNS);
  // The cursor keeps `created_at` as PostgreSQL's own text: a JS Date would drop its microseconds
  // and the next page would start inside the last one's timestamp.
  let after: { at: string; id: string } | null = null;
  for (;;) {
    let q = merchantTransactions(db, scope, filter);
    if (after) {
      const { at, id } = after;
      q = q.where(sql<boolean>`(created_at, id) > (${at}::timestamptz, ${id})`);
    }
    const rows = await q
      .select([...TRANSACTION_RECORD_COLUMNS, sql<string>`created_at::text`.as("cursor_at")])
      .orderBy("created_at")
      .orderBy("id")
      .limit(pageSize)
      .execute();
    if (rows.length === 0) return;
    const records = rows.map((row) => toRecord(row));
    const prices = await sessionPrices(db, records);
    let chunk = "";
    for (const t of records) {
      const sessionId = sessionIdOf(t);
      const row: Row = { t, price: sessionId === null ? undefined : prices.get(sessionId) };
      chunk += csvRow(CELL_FNS.map((cell) => cell(row)));
    }
    yield chunk;
    if (rows.length < pageSize) return;
    const last = rows[rows.length - 1] as (typeof rows)[number];
    after = { at: last.cursor_at, id: last.id };
  }
}

/** The checkout session a deposit belongs to: its own (the session's deposit), or the one it paid late. */
function sessionIdOf(t: TransactionRecord): string | null {
  if (t.type !== "deposit") return null;
  return t.checkoutSessionId ?? t.id;
}

/** The price cells of the fiat-priced sessions of a page's deposits, by session id (one query). */
async function sessionPrices(db: Db, records: TransactionRecord[]): Promise<Map<string, SessionPriceCells>> {
  const ids = [...new Set(records.map(sessionIdOf).filter((id): id is string => id !== null))];
  const out = new Map<string, SessionPriceCells>();
  if (ids.length === 0) return out;
  const rows = await db
    .selectFrom("checkout_sessions")
    .select(["id", "price_amount", "price_currency", "exchange_rate", "rate_source", "rate_at"])
    .where("id", "in", ids)
    .where("price_amount", "is not", null)
    .execute();
  for (const r of rows) {
    if (r.price_amount === null || r.price_currency === null || r.exchange_rate === null) continue;
    if (r.rate_source === null || r.rate_at === null) continue;
    out.set(r.id, {
      priceAmount: formatUnits(BigInt(r.price_amount)),
      priceCurrency: r.price_currency,
      exchangeRate: formatRate(parseStoredRate(r.exchange_rate)),
      rateSource: r.rate_source,
      rateAt: new Date(r.rate_at).toISOString(),
    });
  }
  return out;
}

/** A stored rate (numeric text, as written: `formatRate`) read back exactly. */
function parseStoredRate(text: string): bigint {
  const r = parseRate(text);
  if (!r.ok) throw new Error(`stored exchange rate ${text} unreadable`);
  return r.units;
}
