import { iteratePages } from "../pagination.js";
import type { RequestOptions, Transport } from "../transport.js";
import type { Page, Payout, PayoutListParams, SuccessBody } from "../types.js";

const PATH = "/api/v1/public/payout/get";
type Body = SuccessBody<typeof PATH, "get">;

/** Payouts (created in the dashboard with an e-mailed code; read here). */
export class Payouts {
  constructor(private readonly http: Transport) {}

  /** `GET /payout/get?id=`: one payout. */
  async get(id: string, options?: RequestOptions): Promise<Payout> {
    const body = await this.http.request<Exclude<Body, { pagination: unknown }>>(
      { method: "GET", path: PATH, query: { id } },
      options,
    );
    return body.data as Payout;
  }

  /** `GET /payout/get` without `id`: one page. */
  async list(params: PayoutListParams = {}, options?: RequestOptions): Promise<Page<Payout>> {
    const body = await this.http.request<Extract<Body, { pagination: unknown }>>(
      { method: "GET", path: PATH, query: params },
      options,
    );
    return { data: body.data, pagination: body.pagination };
  }

  iterate(params: PayoutListParams = {}, options?: RequestOptions): AsyncGenerator<Payout, void, undefined> {
    return iteratePages((p: PayoutListParams) => this.list(p, options), params);
  }
}
