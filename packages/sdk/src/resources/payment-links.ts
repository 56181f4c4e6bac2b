import { iteratePages } from "../pagination.js";
import type { RequestOptions, Transport } from "../transport.js";
import type {
  Page,
  PaymentLink,
  PaymentLinkCreateParams,
  PaymentLinkListParams,
  SuccessBody,
} from "../types.js";

const PATH = "/api/v1/public/payment-links";

/** Payment links (§4.6): a reusable page at `url` that opens a checkout session per payer. */
export class PaymentLinks {
  constructor(private readonly http: Transport) {}

  /** `POST /api/v1/public/payment-links` with an Idempotency-Key (yours, or a random one). */
  async create(params: PaymentLinkCreateParams, options?: RequestOptions): Promise<PaymentLink> {
    const body = await this.http.request<SuccessBody<typeof PATH, "post">>(
      { method: "POST", path: PATH, body: params, idempotent: true },
      options,
    );
    return body.data;
  }

  /** `GET /api/v1/public/payment-links/{id}`: with its `payments` and `totalPaid`. */
  async get(id: string, options?: RequestOptions): Promise<PaymentLink> {
    const body = await this.http.request<SuccessBody<"/api/v1/public/payment-links/{id}", "get">>(
      { method: "GET", path: `${PATH}/${encodeURIComponent(id)}` },
      options,
    );
    return body.data;
  }

  /** `GET /api/v1/public/payment-links`: one page. */
  async list(params: PaymentLinkListParams = {}, options?: RequestOptions): Promise<Page<PaymentLink>> {
    const body = await this.http.request<SuccessBody<typeof PATH, "get">>(
      { method: "GET", path: PATH, query: params },
      options,
    );
    return { data: body.data, pagination: body.pagination };
  }

  iterate(
    params: PaymentLinkListParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<PaymentLink, void, undefined> {
    return iteratePages((p: PaymentLinkListParams) => this.list(p, options), params);
  }

  /** `POST /api/v1/public/payment-links/{id}/deactivate`: its page then says the link is closed. */
  async deactivate(id: string, options?: RequestOptions): Promise<PaymentLink> {
    const body = await this.http.request<SuccessBody<"/api/v1/public/payment-links/{id}/deactivate", "post">>(
      { method: "POST", path: `${PATH}/${encodeURIComponent(id)}/deactivate` },
      options,
    );
    return body.data;
  }
}
