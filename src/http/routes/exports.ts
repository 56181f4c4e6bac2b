import { Readable } from "node:stream";
import { Type } from "@sinclair/typebox";
import type { FastifyReply } from "fastify";
import type { Environment } from "../../domain/environment.js";
import { exportTransactionsCsv, type TransactionFilter } from "../../transactions/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { commonErrors } from "../schemas/common.js";
import { TransactionFilterFields, transactionFilter } from "../transaction-query.js";

/**
 * The accounting export (issue #21) on both channels: `GET /api/v1/dashboard/exports/transactions.csv`
 * (the dashboard's session and environment) and `GET /api/v1/public/exports/transactions.csv` (an API
 * key). Same filters as the transaction lists, no paging: every matching row, streamed from the
 * database (`transactions/export.ts`) with the socket's back-pressure, so memory stays flat.
 */

const ExportQuery = Type.Object(TransactionFilterFields);

const DESCRIPTION =
  "Every transaction matching the filters (the list's filters, no paging), oldest first, as RFC 4180 CSV " +
  "(UTF-8, CRLF, a header row). One row per transaction: transactionId, type, status, amount, fee, " +
  "netAmount, actualBalance (exact decimals in the token), currencyType, walletAddress, blockchainTxHash, orderId, " +
  "reference, externalUserId, checkoutSessionId, rejectionReason, createdAt, updatedAt, confirmedAt, " +
  "wrongNetwork (true for a deposit paid on another network than its address was made for, else false). " +
  "A cell that starts with =, +, -, @, a tab or a CR is prefixed with ' so a spreadsheet shows it as text. " +
  "Streamed: the download starts at once and has no row limit; a download cut short ends without its " +
  "last line break.";

const exportAudit = {
  action: "export.transactions",
  fields: { from: "query", names: Object.keys(TransactionFilterFields) },
  // A read: nothing to roll back, recorded once the file's answer is made.
  read: true,
} as const;

const csvResponse = {
  200: {
    description: "The CSV file (`Content-Disposition: attachment`)",
    content: { "text/csv": { schema: Type.String() } },
  },
  ...commonErrors,
};

/**
 * Sends the CSV. The first chunk (the header, then the first page) is read before the reply starts,
 * so a fault there is still an error envelope; a later fault cuts the stream short, which Fastify
 * logs (the status line is gone by then).
 */
async function sendCsv(
  reply: FastifyReply,
  chunks: AsyncGenerator<string>,
  environment: Environment,
  today: Date,
): Promise<FastifyReply> {
  const header = await chunks.next();
  const first = await chunks.next();
  async function* all() {
    if (!header.done) yield header.value;
    if (first.done) return;
    yield first.value;
    yield* chunks;
  }
  const name = `stablegate-${environment}-transactions-${today.toISOString().slice(0, 10)}.csv`;
  return reply
    .type("text/csv; charset=utf-8")
    .header("Content-Disposition", `attachment; filename="${name}"`)
    .header("Cache-Control", "no-store")
    .send(Readable.from(all(), { objectMode: false }));
}

export function exportRoutes(app: App, { database, clock }: RouteDeps) {
  const db = database.db;
  const run = (
    reply: FastifyReply,
    scope: { merchantId: string; environment: Environment },
    filter: TransactionFilter,
  ) => sendCsv(reply, exportTransactionsCsv(db, scope, filter), scope.environment, new Date(clock.now()));

  app.get(
    "/api/v1/dashboard/exports/transactions.csv",
    {
      config: { auth: "dashboard", tier: "dashboard", permission: "exports:read", audit: exportAudit },
      schema: {
        summary: "Export transactions as CSV (the dashboard's environment)",
        description: DESCRIPTION,
        tags: ["Dashboard"],
        querystring: ExportQuery,
        response: csvResponse,
      },
    },
    async (request, reply) => {
      const p = dashboardPrincipal(request);
      return run(reply, p, transactionFilter(request.query));
    },
  );

  app.get(
    "/api/v1/public/exports/transactions.csv",
    {
      config: { auth: "apiKey", tier: "standard", permission: "exports:read", audit: exportAudit },
      schema: {
        summary: "Export transactions as CSV",
        description: DESCRIPTION,
        tags: ["Transactions"],
        querystring: ExportQuery,
        response: csvResponse,
      },
    },
    async (request, reply) => {
      const p = apiKeyPrincipal(request);
      return run(reply, p, transactionFilter(request.query));
    },
  );
}
