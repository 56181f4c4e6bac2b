import { iteratePages } from "../pagination.js";
import type { RequestOptions, Transport } from "../transport.js";
import type {
  Page,
  SuccessBody,
  WebhookEvent,
  WebhookEventDetail,
  WebhookEventListParams,
  WebhookEventRecord,
  WebhookSecretRotateParams,
  WebhookTestResult,
} from "../types.js";
import {
  type RawBody,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaders,
} from "../webhook-verify.js";

const BASE = "/api/v1/webhook";

/**
 * Webhook management of this key pair's environment, and verification of deliveries. Setting the
 * URL and reading or rotating the secret need the client's `apiSecret`.
 */
export class Webhooks {
  constructor(private readonly http: Transport) {}

  /** Where deliveries go (`https`; plain `http` only in the sandbox). */
  async setUrl(webhookUrl: string, options?: RequestOptions): Promise<{ webhookUrl: string }> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/url`, "post">>(
      { method: "POST", path: `${BASE}/url`, body: { webhookUrl } },
      options,
    );
    return body.data;
  }

  /** Sends a signed test delivery now and reports how the endpoint answered. */
  async test(options?: RequestOptions): Promise<WebhookTestResult> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/test`, "post">>(
      { method: "POST", path: `${BASE}/test` },
      options,
    );
    return body.data;
  }

  /** The secret, masked but for its last 8 characters (to tell which one is configured). */
  async getSecret(options?: RequestOptions): Promise<{ webhookSecret: string }> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/secret`, "get">>(
      { method: "GET", path: `${BASE}/secret` },
      options,
    );
    return body.data;
  }

  /**
   * A new secret, shown in full this once. For 24 h deliveries carry a Standard Webhooks signature
   * of both secrets, so receivers can switch over. Not retried except on 429 (a repeated rotation
   * would replace the secret this call returned).
   */
  async rotateSecret(
    params: WebhookSecretRotateParams = {},
    options?: RequestOptions,
  ): Promise<{ webhookSecret: string }> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/secret/rotate`, "post">>(
      { method: "POST", path: `${BASE}/secret/rotate`, body: params },
      options,
    );
    return body.data;
  }

  async listEvents(
    params: WebhookEventListParams = {},
    options?: RequestOptions,
  ): Promise<Page<WebhookEventRecord>> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/events`, "get">>(
      { method: "GET", path: `${BASE}/events`, query: params },
      options,
    );
    return { data: body.data, pagination: body.pagination };
  }

  iterateEvents(
    params: WebhookEventListParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<WebhookEventRecord, void, undefined> {
    return iteratePages((p: WebhookEventListParams) => this.listEvents(p, options), params);
  }

  /** One event with its delivery attempts. */
  async getEvent(webhookEventId: string, options?: RequestOptions): Promise<WebhookEventDetail> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/events/{webhookEventId}`, "get">>(
      { method: "GET", path: `${BASE}/events/${encodeURIComponent(webhookEventId)}` },
      options,
    );
    return body.data;
  }

  /** One delivery attempt now, whatever the event's status; returns the event after it. */
  async retry(webhookEventId: string, options?: RequestOptions): Promise<WebhookEventRecord> {
    const body = await this.http.request<SuccessBody<`${typeof BASE}/retry/{webhookEventId}`, "post">>(
      { method: "POST", path: `${BASE}/retry/${encodeURIComponent(webhookEventId)}` },
      options,
    );
    return body.data;
  }

  /** {@link verifyWebhook}: checks a delivery's signature and returns its typed body. */
  verify(
    rawBody: RawBody,
    headers: WebhookHeaders,
    secret: string | readonly string[],
    options?: VerifyWebhookOptions,
  ): Promise<WebhookEvent> {
    return verifyWebhook(rawBody, headers, secret, options);
  }
}
