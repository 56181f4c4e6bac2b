import type { RequestOptions, Transport } from "../transport.js";
import type { SuccessBody, Wallet, WalletGenerateParams } from "../types.js";

/** Permanent deposit addresses: every payment to one is its own confirmed deposit. */
export class Wallets {
  constructor(private readonly http: Transport) {}

  /** `POST /wallet/generate` with an Idempotency-Key, so a retry returns the same address. */
  async generate(params: WalletGenerateParams, options?: RequestOptions): Promise<Wallet> {
    const body = await this.http.request<SuccessBody<"/wallet/generate", "post">>(
      { method: "POST", path: "/wallet/generate", body: params, idempotent: true },
      options,
    );
    return body.data;
  }
}
