import type { RequestOptions, Transport } from "../transport.js";
import type { BalanceEntry, SuccessBody } from "../types.js";

export class BalanceResource {
  constructor(private readonly http: Transport) {}

  /** `GET /api/v1/public/balance`: one entry per currency type (`available`, `held`, `total`). */
  async get(options?: RequestOptions): Promise<BalanceEntry[]> {
    const body = await this.http.request<SuccessBody<"/api/v1/public/balance", "get">>(
      { method: "GET", path: "/api/v1/public/balance" },
      options,
    );
    return body.data;
  }
}
