import { iteratePages } from "../pagination.js";
import type { RequestOptions, Transport } from "../transport.js";
import type {
  Page,
  SuccessBody,
  Withdrawal,
  WithdrawalCreateParams,
  WithdrawalListParams,
  WithdrawalRejectParams,
} from "../types.js";

const BASE = "/api/v1/public/withdrawal-requests";
type ListBody = SuccessBody<typeof BASE, "get">;

/**
 * End-user withdrawal requests. Creating, approving and rejecting need the client's `apiSecret`.
 * Approve and reject carry no Idempotency-Key (the API takes none there): they are retried only on
 * 429; a repeated one that had been applied answers 409 INVALID_STATE.
 */
export class Withdrawals {
  constructor(private readonly http: Transport) {}

  /** Holds `amount` and pays `netAmount` out (at once under the auto-approve threshold, else `pending`). */
  async create(params: WithdrawalCreateParams, options?: RequestOptions): Promise<Withdrawal> {
    const body = await this.http.request<SuccessBody<typeof BASE, "post">>(
      { method: "POST", path: BASE, body: params, idempotent: true },
      options,
    );
    return body.data;
  }

  /** One page; the API lists `status=pending` unless told otherwise. */
  async list(params: WithdrawalListParams = {}, options?: RequestOptions): Promise<Page<Withdrawal>> {
    const body = await this.http.request<ListBody>({ method: "GET", path: BASE, query: params }, options);
    return { data: body.data, pagination: body.pagination };
  }

  /** Every withdrawal request matching `params`, across pages. */
  iterate(
    params: WithdrawalListParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<Withdrawal, void, undefined> {
    return iteratePages((p: WithdrawalListParams) => this.list(p, options), params);
  }

  async get(id: string, options?: RequestOptions): Promise<Withdrawal> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/{id}`, "get">>(
      { method: "GET", path: `${BASE}/${encodeURIComponent(id)}` },
      options,
    );
    return body.data;
  }

  async approve(id: string, options?: RequestOptions): Promise<Withdrawal> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/{id}/approve`, "post">>(
      { method: "POST", path: `${BASE}/${encodeURIComponent(id)}/approve` },
      options,
    );
    return body.data;
  }

  async reject(
    id: string,
    params: WithdrawalRejectParams = {},
    options?: RequestOptions,
  ): Promise<Withdrawal> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/{id}/reject`, "post">>(
      { method: "POST", path: `${BASE}/${encodeURIComponent(id)}/reject`, body: params },
      options,
    );
    return body.data;
  }
}
