import type { RequestOptions, Transport } from "../transport.js";
import type { Currency, SuccessBody } from "../types.js";

export class Currencies {
  constructor(private readonly http: Transport) {}

  /**
   * `GET /api/v1/public/currencies`: the currency types this gateway enables in the key's
   * environment, each with its token, network, chain family (`evm` or `tron`), chain id, token
   * contract and the confirmations a deposit needs. Every currency type that exists is
   * `CURRENCY_TYPES`; this says which ones the gateway accepts.
   */
  async list(options?: RequestOptions): Promise<Currency[]> {
    const body = await this.http.request<SuccessBody<"/api/v1/public/currencies", "get">>(
      { method: "GET", path: "/api/v1/public/currencies" },
      options,
    );
    return body.data;
  }
}
