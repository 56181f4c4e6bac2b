import type { RequestOptions, Transport } from "../transport.js";
import type {
  SandboxCheckoutPayment,
  SandboxCheckoutPayParams,
  SandboxWalletPayment,
  SandboxWalletPayParams,
  SuccessBody,
} from "../types.js";

/**
 * The sandbox simulator (404 on the production base URL): pays a session or an address the way a
 * customer would, so the deposit webhooks follow. Each call is a new transfer: not retried except on 429.
 */
export class Sandbox {
  constructor(private readonly http: Transport) {}

  /** Pays a checkout session (default: its full amount). */
  async payCheckoutSession(
    id: string,
    params: SandboxCheckoutPayParams = {},
    options?: RequestOptions,
  ): Promise<SandboxCheckoutPayment> {
    const body = await this.http.request<SuccessBody<"/api/v1/sandbox/checkout/{id}/pay", "post">>(
      { method: "POST", path: `/api/v1/sandbox/checkout/${encodeURIComponent(id)}/pay`, body: params },
      options,
    );
    return body.data;
  }

  /** Pays a `wallets.generate` address. */
  async payWallet(
    address: string,
    params: SandboxWalletPayParams,
    options?: RequestOptions,
  ): Promise<SandboxWalletPayment> {
    const body = await this.http.request<SuccessBody<"/api/v1/sandbox/wallet/{address}/pay", "post">>(
      { method: "POST", path: `/api/v1/sandbox/wallet/${encodeURIComponent(address)}/pay`, body: params },
      options,
    );
    return body.data;
  }
}
