import type { RequestOptions, Transport } from "../transport.js";
import type { CheckoutSession, CheckoutSessionCreateParams, SuccessBody } from "../types.js";

/** Checkout sessions: one payment of `amount` to a fresh address, with a hosted page. */
export class CheckoutSessions {
  constructor(private readonly http: Transport) {}

  /** `POST /checkout/session` with an Idempotency-Key (yours, or a random one) so a retry never pays twice. */
  async create(params: CheckoutSessionCreateParams, options?: RequestOptions): Promise<CheckoutSession> {
    const body = await this.http.request<SuccessBody<"/checkout/session", "post">>(
      { method: "POST", path: "/checkout/session", body: params, idempotent: true },
      options,
    );
    return body.data;
  }

  /** `GET /checkout/session/{id}`. */
  async get(id: string, options?: RequestOptions): Promise<CheckoutSession> {
    const body = await this.http.request<SuccessBody<"/checkout/session/{id}", "get">>(
      { method: "GET", path: `/checkout/session/${encodeURIComponent(id)}` },
      options,
    );
    return body.data;
  }
}
