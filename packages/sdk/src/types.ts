import type { paths, webhooks } from "./generated/api.js";

/**
 * Every public type of the SDK is derived from the operations of the generated OpenAPI types
 * (`paths[path][method]`), never copied by hand and never taken from component names, so that the
 * document can name and rename its components freely: what a merchant sends and gets is what the
 * server's route schemas say.
 */

export type Path = keyof paths;
type Method = "get" | "post";
type Operation<P extends Path, M extends Method> = NonNullable<paths[P][M]>;

/** The JSON body an operation accepts (`never` when it takes none). */
export type RequestBody<P extends Path, M extends Method> =
  NonNullable<Operation<P, M>["requestBody"]> extends { content: { "application/json": infer B } }
    ? B
    : never;

/** The query parameters an operation accepts. */
export type QueryParams<P extends Path, M extends Method> =
  Operation<P, M> extends {
    parameters: { query?: infer Q };
  }
    ? NonNullable<Q>
    : never;

type Responses<P extends Path, M extends Method> = Operation<P, M>["responses"];
type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : never;

/** The 2xx JSON body of an operation (200, 201 or 202). */
export type SuccessBody<P extends Path, M extends Method> = JsonOf<
  Responses<P, M>[Extract<keyof Responses<P, M>, 200 | 201 | 202>]
>;

/** `data` of a single-object success body. */
export type Data<P extends Path, M extends Method> = SuccessBody<P, M> extends { data: infer D } ? D : never;

type ListBody<P extends Path, M extends Method> = Extract<SuccessBody<P, M>, { pagination: unknown }>;
/** One element of a list operation's `data`. */
export type Item<P extends Path, M extends Method> = ListBody<P, M> extends { data: (infer T)[] } ? T : never;

export type Pagination = ListBody<"/api/v1/public/transactions", "get">["pagination"];

/** One page of a list: its items and where it sits in the whole list. */
export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

// Resources ------------------------------------------------------------------------------------

export type CheckoutSession = Data<"/checkout/session/{id}", "get">;
export type CheckoutSessionCreateParams = RequestBody<"/checkout/session", "post">;

export type Wallet = Data<"/wallet/generate", "post">;
export type WalletGenerateParams = RequestBody<"/wallet/generate", "post">;

export type Withdrawal = Data<"/api/v1/public/withdrawal-requests/{id}", "get">;
export type WithdrawalCreateParams = RequestBody<"/api/v1/public/withdrawal-requests", "post">;
export type WithdrawalListParams = QueryParams<"/api/v1/public/withdrawal-requests", "get">;
export type WithdrawalRejectParams = RequestBody<"/api/v1/public/withdrawal-requests/{id}/reject", "post">;

export type PaymentLink = Data<"/api/v1/public/payment-links/{id}", "get">;
export type PaymentLinkCreateParams = RequestBody<"/api/v1/public/payment-links", "post">;
export type PaymentLinkListParams = QueryParams<"/api/v1/public/payment-links", "get">;

/** `GET /payout/get` answers one payout with `?id=`, else a page: the list variant names the item. */
export type Payout = Item<"/api/v1/public/payout/get", "get">;
export type PayoutListParams = Omit<QueryParams<"/api/v1/public/payout/get", "get">, "id">;

/** One line per currency type: `available`, `held` and `total`. */
export type BalanceEntry = Data<"/api/v1/public/balance", "get"> extends (infer E)[] ? E : never;

export type Transaction = Data<"/api/v1/public/transactions/{id}", "get">;
export type TransactionListParams = QueryParams<"/api/v1/public/transactions", "get">;

export type Account = Data<"/api/v1/public/account", "get">;

/** An enabled currency type of the key's environment: token, network, chain family, contract. */
export type Currency = Data<"/api/v1/public/currencies", "get"> extends (infer C)[] ? C : never;

export type WebhookTestResult = Data<"/api/v1/webhook/test", "post">;
export type WebhookEventRecord = Item<"/api/v1/webhook/events", "get">;
export type WebhookEventDetail = Data<"/api/v1/webhook/events/{webhookEventId}", "get">;
export type WebhookEventListParams = QueryParams<"/api/v1/webhook/events", "get">;
export type WebhookSecretRotateParams = RequestBody<"/api/v1/webhook/secret/rotate", "post">;

export type SandboxCheckoutPayParams = RequestBody<"/api/v1/sandbox/checkout/{id}/pay", "post">;
export type SandboxCheckoutPayment = Data<"/api/v1/sandbox/checkout/{id}/pay", "post">;
export type SandboxWalletPayParams = RequestBody<"/api/v1/sandbox/wallet/{address}/pay", "post">;
export type SandboxWalletPayment = Data<"/api/v1/sandbox/wallet/{address}/pay", "post">;

// Webhook deliveries ---------------------------------------------------------------------------

type DocumentedDelivery = {
  [K in keyof webhooks]: webhooks[K] extends {
    post: { requestBody?: { content: { "application/json": infer B } } };
  }
    ? B
    : never;
}[keyof webhooks];

/**
 * The body the gateway POSTs to a webhook URL when the document has no `webhooks` section: the
 * transaction object of `GET /transactions/{id}` with the fields a delivery adds (`environment`,
 * and `metadata`/`rejectionReason` where they apply), `type: "test"` for a test delivery.
 */
export interface TransactionDelivery {
  success: true;
  message: string;
  data: Omit<Transaction, "type" | "status"> & {
    type: Transaction["type"] | "test";
    status: Transaction["status"] | "test";
    environment?: "sandbox" | "production";
    metadata?: Record<string, unknown> | null;
    rejectionReason?: string | null;
  };
}

/**
 * A verified webhook delivery: the body schema of the document's `webhooks` section when it has
 * one, else {@link TransactionDelivery}.
 */
export type WebhookEvent = string extends keyof webhooks
  ? TransactionDelivery
  : [DocumentedDelivery] extends [never]
    ? TransactionDelivery
    : DocumentedDelivery;
