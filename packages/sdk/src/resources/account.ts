import type { RequestOptions, Transport } from "../transport.js";
import type { Account, SuccessBody } from "../types.js";

export class AccountResource {
  constructor(private readonly http: Transport) {}

  /** `GET /api/v1/public/account`: the merchant and environment this key pair belongs to. */
  async get(options?: RequestOptions): Promise<Account> {
    const body = await this.http.request<SuccessBody<"/api/v1/public/account", "get">>(
      { method: "GET", path: "/api/v1/public/account" },
      options,
    );
    return body.data;
  }
}
