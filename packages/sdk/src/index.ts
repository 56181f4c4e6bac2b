/**
 * @stablegate/sdk: the typed client of the stablegate API, safe retries, and webhook verification.
 */
export {
  DEFAULT_BASE_URLS,
  type Environment,
  environmentOfKey,
  Stablegate,
  type StablegateOptions,
} from "./client.js";
export {
  AuthenticationError,
  ChainUnavailableError,
  type ClientErrorCode,
  ConnectionError,
  type ErrorCode,
  type FieldError,
  IdempotencyConflictError,
  IdempotencyError,
  IdempotencyMismatchError,
  InsufficientBalanceError,
  InternalServerError,
  InvalidStateError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  RateUnavailableError,
  ServiceUnavailableError,
  StablegateError,
  TimeoutError,
  ValidationError,
} from "./errors.js";
export * from "./generated/enums.js";
export { iteratePages, MAX_PAGE_SIZE } from "./pagination.js";
export type { RequestOptions, ResponseInfo } from "./transport.js";
export type {
  Account,
  BalanceEntry,
  CheckoutSession,
  CheckoutSessionCreateParams,
  Currency,
  Page,
  Pagination,
  Payout,
  PayoutListParams,
  SandboxCheckoutPayment,
  SandboxCheckoutPayParams,
  SandboxWalletPayment,
  SandboxWalletPayParams,
  Transaction,
  TransactionDelivery,
  TransactionListParams,
  Wallet,
  WalletGenerateParams,
  WebhookEvent,
  WebhookEventDetail,
  WebhookEventListParams,
  WebhookEventRecord,
  WebhookSecretRotateParams,
  WebhookTestResult,
  Withdrawal,
  WithdrawalCreateParams,
  WithdrawalListParams,
  WithdrawalRejectParams,
} from "./types.js";
export {
  type RawBody,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from "./webhook-verify.js";
