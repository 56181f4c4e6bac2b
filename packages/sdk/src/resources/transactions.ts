import { iteratePages } from "../pagination.js";
import type { RequestOptions, Transport } from "../transport.js";
import type { Page, SuccessBody, Transaction, TransactionListParams } from "../types.js";

const BASE = "/api/v1/public/transactions";

/** Deposits, withdrawals and payouts in one list. */
export class Transactions {
  constructor(private readonly http: Transport) {}

  async list(params: TransactionListParams = {}, options?: RequestOptions): Promise<Page<Transaction>> {
    const body = await this.http.request<SuccessBody<typeof BASE, "get">>(
      { method: "GET", path: BASE, query: params },
      options,
    );
    return { data: body.data, pagination: body.pagination };
  }

  /** `for await (const t of client.transactions.iterate({ type: "deposit" }))`: every match, page by page. */
  iterate(
    params: TransactionListParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<Transaction, void, undefined> {
    return iteratePages((p: TransactionListParams) => this.list(p, options), params);
  }

  async get(id: string, options?: RequestOptions): Promise<Transaction> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/{id}`, "get">>(
      { method: "GET", path: `${BASE}/${encodeURIComponent(id)}` },
      options,
    );
    return body.data;
  }
}
